import { Component, type ComponentChildren } from 'preact';
import { errorMessage } from './feedback';

/** A bug in a screen shows what happened and a way out, never a blank page. */
export class ErrorBoundary extends Component<{ children: ComponentChildren }, { error: unknown }> {
  state = { error: null as unknown };

  static getDerivedStateFromError(error: unknown) {
    return { error };
  }

  override render() {
    if (this.state.error) {
      return (
        <div class="notice notice-error" role="alert">
          <p>The dashboard met an unexpected problem: {errorMessage(this.state.error)}</p>
          <button type="button" onClick={() => location.reload()}>
            Reload the page
          </button>
        </div>
      );
    }
    return this.props.children;
  }
}
