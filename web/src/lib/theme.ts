/**
 * The colour theme: light, dark, or the system's (`prefers-color-scheme`). Only the choice is
 * kept, in localStorage (it is no secret and should outlive the tab; the API key stays in
 * sessionStorage). Applied as `<html data-theme="light|dark">`; without the attribute the
 * stylesheet follows the system (web/src/styles.css).
 */
export type ThemeChoice = 'light' | 'dark' | 'system';

export const THEME_ITEM = 'cms.theme';
export const THEME_CHOICES: ReadonlyArray<{ value: ThemeChoice; label: string }> = [
  { value: 'system', label: 'System' },
  { value: 'light', label: 'Light' },
  { value: 'dark', label: 'Dark' },
];

export function storedTheme(): ThemeChoice {
  try {
    const value = localStorage.getItem(THEME_ITEM);
    return value === 'light' || value === 'dark' ? value : 'system';
  } catch {
    return 'system';
  }
}

export function applyTheme(choice: ThemeChoice): void {
  const root = document.documentElement;
  if (choice === 'system') delete root.dataset.theme;
  else root.dataset.theme = choice;
}

export function saveTheme(choice: ThemeChoice): void {
  try {
    if (choice === 'system') localStorage.removeItem(THEME_ITEM);
    else localStorage.setItem(THEME_ITEM, choice);
  } catch {
    /* storage unavailable: the choice lasts for this page only */
  }
  applyTheme(choice);
}
