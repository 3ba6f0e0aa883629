import { useEffect, useRef, useState } from 'preact/hooks';
import { onUnauthorized, session } from './api';
import { ErrorBoundary } from './components/error-boundary';
import { href, useRoute, type Route } from './router';
import { CopilotScreen } from './screens/copilot';
import { CopilotsScreen } from './screens/copilots';
import { SignIn } from './screens/sign-in';

export function App() {
  const [key, setKey] = useState(() => session.get());
  const [notice, setNotice] = useState<string | null>(null);

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
          setKey(next);
        }}
      />
    );
  }
  return (
    <Shell
      onSignOut={() => {
        session.clear();
        setNotice('You are signed out. The key was removed from this tab.');
        setKey(null);
      }}
    />
  );
}

function routeKey(route: Route): string {
  return route.name === 'copilot' ? `copilot:${route.id}` : route.name;
}

function Shell({ onSignOut }: { onSignOut(): void }) {
  const route = useRoute();
  const main = useRef<HTMLElement>(null);
  const first = useRef(true);

  // On navigation, move the focus to the new screen's heading (keyboard and screen-reader users start there).
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
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
          <a href="backend/openapi.json" target="_blank" rel="noopener">
            API
          </a>
        </nav>
        <button type="button" class="sign-out" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <main id="main" ref={main}>
        <ErrorBoundary key={routeKey(route)}>
          {route.name === 'copilots' && <CopilotsScreen />}
          {route.name === 'copilot' && <CopilotScreen id={route.id} tab={route.tab} />}
          {route.name === 'not-found' && (
            <section>
              <h1 tabIndex={-1}>Not found</h1>
              <p>
                The dashboard has no page at <code>{route.path}</code>. <a href={href({ name: 'copilots' })}>Go to the copilots</a>.
              </p>
            </section>
          )}
        </ErrorBoundary>
      </main>
    </>
  );
}
