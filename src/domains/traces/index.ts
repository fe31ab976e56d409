/** The traces module: ingest, queries, flags, stats and exports. */
import { defineModule } from '../../core/module.js';
import { traceRoutes } from './routes.js';
import { loadPriceTable, Pricing } from './pricing.js';

export const tracesModule = defineModule({
  name: 'traces',
  routes: traceRoutes,
  needs: ['config'],
  services: ({ config }) => ({
    /** Cost estimates for traces sent without a cost (the shipped table or PRICE_TABLE_PATH). */
    pricing: new Pricing(loadPriceTable(config.PRICE_TABLE_PATH)),
  }),
  jobs: [],
  schedules: [],
  caches: [],
});
