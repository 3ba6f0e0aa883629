import { useState } from 'preact/hooks';
import { saveTheme, storedTheme, THEME_CHOICES, type ThemeChoice } from '../lib/theme';

/** Light, dark or the system's theme; the choice is kept in this browser (localStorage). */
export function ThemeToggle() {
  const [choice, setChoice] = useState<ThemeChoice>(() => storedTheme());
  return (
    <label class="theme-toggle">
      <span class="theme-label">Theme</span>
      <select
        data-testid="theme"
        value={choice}
        onChange={(e) => {
          const next = (e.target as HTMLSelectElement).value as ThemeChoice;
          setChoice(next);
          saveTheme(next);
        }}
      >
        {THEME_CHOICES.map((c) => (
          <option key={c.value} value={c.value}>
            {c.label}
          </option>
        ))}
      </select>
    </label>
  );
}
