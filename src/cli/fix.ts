/** `copilot-service fix FILE [--apply]`: in tools.ts, which shares its reading and output. */
export { runFix } from './tools.js';
