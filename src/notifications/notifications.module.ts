import { Module } from '@nestjs/common';
import { NotificationOutbox } from './notification-outbox.js';
import { NotificationPublisher } from './notification-publisher.js';
import { OutboxPruner } from './outbox-pruner.js';
import { WebhookDispatcher } from './webhook-dispatcher.js';
import { WebhookSender } from './webhook-sender.js';
import { WebhookStore } from './webhook-store.js';

/** The outbox (the lease use cases write to it; they import this module) and its senders. */
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
