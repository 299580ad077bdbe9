import { Global, Module } from '@nestjs/common';
import { NotificationOutbox } from './notification-outbox.js';
import { NotificationPublisher } from './notification-publisher.js';

/** Global: lease services and the event runner write to the outbox. */
@Global()
@Module({
  providers: [NotificationOutbox, NotificationPublisher],
  exports: [NotificationOutbox, NotificationPublisher],
})
export class NotificationsModule {}
