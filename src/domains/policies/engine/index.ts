/** The enforcement engine's surface for the enforce route (docs/decisions.md, "Enforcement engine"). */
export { compileAll, compileCached, compilePolicy, type CompiledPolicy } from './compile.js';
export { decide, inScope, BUDGET_PAUSER } from './decide.js';
export { createHttpValidator } from './validator.js';
export type * from './types.js';
