/**
 * WEBHOOK_URL is checked at start as every other setting is: a URL with a user name or password
 * (which the guarded fetcher refuses, so every delivery would fail), or one that is not an
 * absolute http(s) URL, stops the start with a problem naming WEBHOOK_URL — without echoing the
 * value, whose credentials, path or query may be the secret.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';

const SECRET = 'a-webhook-secret-of-some-length';

/** The problems loadConfig reports for `env` (none: []). */
function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
}

describe('WEBHOOK_URL', () => {
  it('refuses a user name or password, naming WEBHOOK_URL and echoing none of the URL', () => {
    for (const url of [
      'http://hookuser:HOOKPASSWORD@127.0.0.2:18151/hook/T0001/HOOKPATHSECRET?sig=HOOKQUERYSECRET',
      'https://hookuser@hooks.example.com/hook/HOOKPATHSECRET',
      'https://:HOOKPASSWORD@hooks.example.com/hook',
    ]) {
      const problems = problemsOf({ WEBHOOK_URL: url, WEBHOOK_SECRET: SECRET });
      expect(problems, url).toEqual([expect.stringMatching(/^WEBHOOK_URL .*user name or password/)]);
      expect(problems.join('\n')).not.toMatch(/HOOKPASSWORD|hookuser|HOOKPATHSECRET|HOOKQUERYSECRET/);
    }
  });

  it('refuses what is not an absolute http(s) URL, echoing none of it', () => {
    for (const url of [
      'hooks.example.com/hook/HOOKPATHSECRET',
      '/hook/HOOKPATHSECRET',
      'ftp://hookuser:HOOKPASSWORD@hooks.example.com/HOOKPATHSECRET',
      'https://[::1/HOOKPATHSECRET',
      'https://hooks.example.com/hook HOOKPATHSECRET',
      'https://',
    ]) {
      const problems = problemsOf({ WEBHOOK_URL: url, WEBHOOK_SECRET: SECRET });
      expect(problems, url).toEqual([expect.stringMatching(/^WEBHOOK_URL must be an absolute http:\/\/ or https:\/\/ URL/)]);
      expect(problems.join('\n')).not.toMatch(/HOOKPASSWORD|hookuser|HOOKPATHSECRET/);
    }
  });

  it('is reported with every other bad key at once', () => {
    const problems = problemsOf({ WEBHOOK_URL: 'https://u:p@hooks.example.com/x', WEBHOOK_SECRET: SECRET, PORT: 'http' });
    expect(problems).toEqual([expect.stringMatching(/^WEBHOOK_URL /), expect.stringMatching(/^PORT /)]);
  });

  it('keeps a good URL exactly as configured, path, port and query included', () => {
    for (const url of [
      'https://hooks.example.com/services/T0001/B0002/XyZ?sig=abc',
      'http://127.0.0.2:18151/hook/T0001/HOOKPATHSECRET?sig=HOOKQUERYSECRET',
      'HTTPS://Hooks.Example.com:8443/hook',
      'http://[::1]:9000/hook',
    ]) {
      expect(loadConfig({ WEBHOOK_URL: url, WEBHOOK_SECRET: SECRET }).webhookUrl, url).toBe(url);
    }
  });
});
