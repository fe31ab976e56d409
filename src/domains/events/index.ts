/** The events module: the outbox written in the changing transaction, and who subscribes to what. */
import { defineModule } from '../../core/module.js';
import { emit } from './outbox.js';
import { noSubscriptions } from './subscriptions.js';

export const eventsModule = defineModule({
  name: 'events',
  needs: [],
  services: () => ({
    /** Which event types some webhook wants (nobody until webhooks exist). */
    subscriptions: noSubscriptions,
    emit,
  }),
  caches: [],
});
