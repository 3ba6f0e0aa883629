/** The actions the audit log records (DESIGN §7), in order; nothing imported, so the dashboard shares the list. */
export const AUDIT_ACTIONS = [
  'key.create',
  'key.revoke',
  'copilot.create',
  'copilot.update',
  'copilot.delete',
  'copilot.purge',
  'api_description.upload',
  'api_description.sync',
  'knowledgebase.add_links',
  'knowledgebase.delete_links',
  'knowledgebase.crawl',
  'knowledgebase.cancel_crawl',
  'knowledgebase.refresh',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];
