export * from './organizations.js';
export * from './users.js';
export * from './api-keys.js';
export * from './teams.js';
export * from './saved-filters.js';
export * from './audit.js';
export * from './outbox.js';
