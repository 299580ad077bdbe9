import { Global, Module } from '@nestjs/common';
import { NotificationOutbox } from './notification-outbox.js';
import { NotificationPublisher } from './notification-publisher.js';
import { OutboxPruner } from './outbox-pruner.js';
import { WebhookDispatcher } from './webhook-dispatcher.js';
import { WebhookSender } from './webhook-sender.js';
import { WebhookStore } from './webhook-store.js';

/** Global: lease services and the event runner write to the outbox. */
@Global()
@Module({
  providers: [
    NotificationOutbox,
    NotificationPublisher,
    OutboxPruner,
    WebhookStore,
    WebhookSender,
    WebhookDispatcher,
  ],
  exports: [NotificationOutbox, NotificationPublisher, WebhookDispatcher],
})
export class NotificationsModule {}
