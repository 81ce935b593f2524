/** Public face of the notifications module: the notifier port (SMS and e-mail), its sandbox adapter and the outbox test helper. */
export type { NotificationChannel, Notifier, OutgoingMessage } from './notifier';
export { SandboxNotifier } from './sandbox-notifier';
export { OutboxService, type OutboxMessageView } from './outbox-service';
export { notificationsHandlers } from './notifications-handlers';
export { notificationsJobs } from './notifications-jobs';
