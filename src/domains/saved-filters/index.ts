/** The saved filters module: per-owner saved list filters. */
import { defineModule } from '../../core/module.js';
import { savedFilterRoutes } from './routes.js';

export const savedFiltersModule = defineModule({
  name: 'saved-filters',
  routes: savedFilterRoutes,
  needs: [],
  services: () => ({}),
  caches: [],
});
