/**
 * The platforms whose tool definitions the service builds (GET …/tools, `copilot-service
 * tools`). A module of its own with no imports: the wire schemas (and the dashboard) and the
 * CLI's bundle read it, and neither may pull in the other's dependencies.
 */
export const TOOL_PLATFORM_IDS = ['openai', 'anthropic', 'gemini', 'mcp'] as const;
