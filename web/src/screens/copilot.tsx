import { useState } from 'preact/hooks';
import { api, ApiError, type Copilot } from '../api';
import { ErrorNotice, Loading, StatusBadge, SuccessNotice } from '../components/feedback';
import { useDocumentTitle, useLoad } from '../hooks';
import { flash, href, type CopilotTab } from '../router';
import { usePermissions } from '../use-permissions';
import { KnowledgeBaseScreen } from './knowledge-base';
import { ReportScreen } from './report';
import { SettingsScreen } from './settings';
import { VersionsScreen } from './versions';

const TABS: ReadonlyArray<{ tab: CopilotTab; label: string; title: string }> = [
  { tab: 'settings', label: 'Settings', title: 'Settings' },
  { tab: 'report', label: 'Validation report', title: 'Report' },
  { tab: 'versions', label: 'Versions', title: 'Versions' },
  { tab: 'knowledge-base', label: 'Knowledge base', title: 'Knowledge base' },
];

/** One copilot: its name and status, tabs for its settings, validation report and knowledge base. */
export function CopilotScreen({ id, tab }: { id: string; tab: CopilotTab }) {
  const copilot = useLoad((signal) => api.getCopilot(id, signal), [id]);
  const [message] = useState(() => ({ text: flash.take(), tab }));
  // A key without knowledgebase:read for this copilot is not offered its knowledge base.
  const kbReadable = usePermissions().may('knowledgebase:read', id);
  const tabTitle = TABS.find((t) => t.tab === tab)?.title ?? 'Settings';
  useDocumentTitle(copilot.data ? `${copilot.data.name} — ${tabTitle}` : 'Copilot');

  if (copilot.loading && !copilot.data) return <Loading label="Loading the copilot…" />;
  if (!copilot.data) {
    const notFound = copilot.error instanceof ApiError && copilot.error.status === 404;
    return (
      <section>
        <h1 tabIndex={-1}>Copilot</h1>
        <ErrorNotice error={copilot.error}>
          {notFound ? (
            <a href={href({ name: 'copilots' })}>Back to the copilots</a>
          ) : (
            <button type="button" onClick={() => copilot.reload()}>
              Try again
            </button>
          )}
        </ErrorNotice>
      </section>
    );
  }
  const c = copilot.data;
  return (
    <section aria-labelledby="page-title">
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href={href({ name: 'copilots' })}>Copilots</a> <span aria-hidden="true">›</span> <bdi aria-current="page">{c.name}</bdi>
      </nav>
      <div class="page-head">
        <h1 id="page-title" tabIndex={-1}>
          <bdi>{c.name}</bdi>
        </h1>
        <StatusBadge status={c.status} />
      </div>
      <nav class="tabs" aria-label="Copilot sections">
        {TABS.filter((t) => t.tab !== 'knowledge-base' || kbReadable).map((t) => (
          <a key={t.tab} href={href({ name: 'copilot', id, tab: t.tab })} aria-current={t.tab === tab ? 'page' : undefined}>
            {t.label}
          </a>
        ))}
      </nav>
      {message.text && message.tab === tab && <SuccessNotice>{message.text}</SuccessNotice>}
      {tab === 'settings' && <SettingsScreen copilot={c} onChange={(next: Copilot) => copilot.set(next)} />}
      {tab === 'report' && <ReportScreen copilot={c} />}
      {tab === 'versions' && <VersionsScreen copilot={c} onChange={(next: Copilot) => copilot.set(next)} />}
      {tab === 'knowledge-base' &&
        (kbReadable ? (
          <KnowledgeBaseScreen copilot={c} />
        ) : (
          <div class="notice notice-warn" role="status">
            <p>This key may not read this copilot’s knowledge base (it lacks the knowledgebase:read scope for it).</p>
          </div>
        ))}
    </section>
  );
}
