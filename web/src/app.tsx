import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, onUnauthorized, session } from './api';
import { ErrorBoundary } from './components/error-boundary';
import { ErrorNotice, Loading } from './components/feedback';
import { ThemeToggle } from './components/theme-toggle';
import { useDocumentTitle, useLoad } from './hooks';
import { describeReach, permissionsOf, type Permissions } from './lib/permissions';
import { href, useRoute, type Route } from './router';
import { CopilotScreen } from './screens/copilot';
import { AuditScreen } from './screens/audit';
import { CopilotsScreen } from './screens/copilots';
import { KeysScreen } from './screens/keys';
import { SignIn } from './screens/sign-in';
import { PermissionsContext } from './use-permissions';

export function App() {
  const [key, setKey] = useState(() => session.get());
  const [notice, setNotice] = useState<string | null>(null);
  // Signed in with the form (not a key kept from before a reload): the first screen takes the focus.
  const [fromForm, setFromForm] = useState(false);

  useEffect(() => {
    // A key revoked (or a database reset) while signed in: back to the sign-in form, saying why.
    onUnauthorized((error) => {
      session.clear();
      setKey(null);
      setNotice(`You were signed out: ${error.message}`);
    });
    return () => onUnauthorized(null);
  }, []);

  if (!key) {
    return (
      <SignIn
        notice={notice}
        onSignedIn={(next) => {
          session.set(next);
          setNotice(null);
          setFromForm(true);
          setKey(next);
        }}
      />
    );
  }
  return (
    <SignedIn
      keyValue={key}
      focusFirstScreen={fromForm}
      onSignOut={() => {
        session.clear();
        setNotice('You are signed out. The key was removed from this tab.');
        setKey(null);
      }}
    />
  );
}

/** Reads what the key may do (GET /backend/api/keys/me) before showing any screen, so none offers what would fail. */
function SignedIn({ keyValue, focusFirstScreen, onSignOut }: { keyValue: string; focusFirstScreen: boolean; onSignOut(): void }) {
  const identity = useLoad((signal) => api.me(signal), [keyValue]);
  const permissions = useMemo(() => (identity.data ? permissionsOf(identity.data) : null), [identity.data]);
  if (!permissions) {
    return (
      <main id="main" class="signing-in">
        {identity.loading ? (
          <Loading label="Reading what this key may do…" />
        ) : (
          <ErrorNotice error={identity.error}>
            <button type="button" onClick={() => identity.reload()}>
              Try again
            </button>{' '}
            <button type="button" onClick={onSignOut}>
              Sign out
            </button>
          </ErrorNotice>
        )}
      </main>
    );
  }
  return (
    <PermissionsContext.Provider value={permissions}>
      <Shell onSignOut={onSignOut} permissions={permissions} focusFirstScreen={focusFirstScreen} />
    </PermissionsContext.Provider>
  );
}

function routeKey(route: Route): string {
  return route.name === 'copilot' ? `copilot:${route.id}` : route.name;
}

function Shell({ onSignOut, permissions, focusFirstScreen }: { onSignOut(): void; permissions: Permissions; focusFirstScreen: boolean }) {
  const me = permissions.identity;
  const route = useRoute();
  const main = useRef<HTMLElement>(null);
  const first = useRef(true);

  // On navigation, move the focus to the new screen's heading (keyboard and screen-reader users start there);
  // on the first screen only after a sign-in (the form that had the focus is gone).
  useEffect(() => {
    if (first.current) {
      first.current = false;
      if (!focusFirstScreen) return;
    }
    const heading = main.current?.querySelector<HTMLElement>('h1');
    heading?.focus();
  }, [routeKey(route)]);

  return (
    <>
      <a
        class="skip"
        href="#main"
        onClick={(e) => {
          e.preventDefault();
          main.current?.querySelector<HTMLElement>('h1')?.focus();
        }}
      >
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href={href({ name: 'copilots' })} aria-label="Copilot Management: all copilots">
          <span class="logo" aria-hidden="true">
            C
          </span>
          <span class="brand-text">Copilot Management</span>
        </a>
        <nav aria-label="Main">
          <a href={href({ name: 'copilots' })} aria-current={route.name === 'copilots' ? 'page' : undefined}>
            Copilots
          </a>
          {permissions.mayManageKeys && (
            <a href={href({ name: 'keys' })} aria-current={route.name === 'keys' ? 'page' : undefined}>
              Keys
            </a>
          )}
          {permissions.mayReadAudit && (
            <a href={href({ name: 'audit', filters: {} })} aria-current={route.name === 'audit' ? 'page' : undefined}>
              Audit
            </a>
          )}
          <a href="docs" target="_blank" rel="noopener">
            API
          </a>
        </nav>
        {me && (
          <span class="whoami" data-testid="whoami" title={`API key ${me.id}`}>
            <bdi>{me.name || me.id}</bdi> <span class="muted">· {describeReach(me)}</span>
          </span>
        )}
        <ThemeToggle />
        <button type="button" class="sign-out" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <main id="main" ref={main}>
        <ErrorBoundary key={routeKey(route)}>
          {route.name === 'copilots' && <CopilotsScreen filters={route.filters} />}
          {route.name === 'copilot' && <CopilotScreen id={route.id} tab={route.tab} />}
          {route.name === 'keys' && <KeysScreen />}
          {route.name === 'audit' && <AuditScreen filters={route.filters} />}
          {route.name === 'not-found' && <NotFound path={route.path} />}
        </ErrorBoundary>
      </main>
    </>
  );
}

function NotFound({ path }: { path: string }) {
  useDocumentTitle('Not found');
  return (
    <section>
      <h1 tabIndex={-1}>Not found</h1>
      <p>
        The dashboard has no page at <code>{path}</code>. <a href={href({ name: 'copilots' })}>Go to the copilots</a>.
      </p>
    </section>
  );
}
