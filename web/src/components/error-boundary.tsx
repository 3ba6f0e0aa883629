import { Component, type ComponentChildren } from 'preact';
import { ApiError } from '../api';
import { errorMessage } from './feedback';

/**
 * A bug in a screen, or an answer a screen cannot read, shows what happened and a way out,
 * never a blank page. An answer of the wrong shape fails inside a screen as a JavaScript error
 * ("g.map is not a function" once minified): that is said in words, the error folded away.
 */
export class ErrorBoundary extends Component<{ children: ComponentChildren }, { error: unknown }> {
  state = { error: null as unknown };

  static getDerivedStateFromError(error: unknown) {
    return { error };
  }

  override render() {
    const { error } = this.state;
    if (error) {
      return (
        <div class="notice notice-error" role="alert">
          {error instanceof ApiError ? (
            <p>The dashboard met an unexpected problem: {errorMessage(error)}</p>
          ) : (
            <>
              <p>
                The dashboard could not show this page: an answer was not what it expects (a proxy in front of the service, or a service of another version, may
                be answering), or the dashboard has a fault of its own.
              </p>
              <details>
                <summary>Technical detail</summary>
                <code>{errorMessage(error)}</code>
              </details>
            </>
          )}
          <button type="button" onClick={() => location.reload()}>
            Reload the page
          </button>
        </div>
      );
    }
    return this.props.children;
  }
}
