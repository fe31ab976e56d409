/** The events module: the outbox written in the changing transaction (delivered by the webhooks module, which also answers who subscribes to what). */
import { defineModule } from '../../core/module.js';
import { emit } from './outbox.js';

export const eventsModule = defineModule({
  name: 'events',
  needs: [],
  services: () => ({
    emit,
  }),
  caches: [],
});
