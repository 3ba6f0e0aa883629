import { render } from 'preact';
import { App } from './app';
import { applyTheme, storedTheme } from './lib/theme';
import './styles.css';

// The chosen theme before the first render (no flash of the other one).
applyTheme(storedTheme());
render(<App />, document.getElementById('app')!);
