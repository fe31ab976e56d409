/**
 * The policies module's public surface. For now only the glob matcher, which access grants use
 * (docs/decisions.md, "Access grants"); the policies branch adds the module itself here.
 */
export { compileGlob, globProblem, MAX_GLOB_LENGTH, type Glob } from './glob.js';
