import { describe, expect, it } from 'vitest';
import { redactText } from '../../src/domain/knowledgebase/redact.js';

// enhanced_privacy (issue 16 §2): what redaction replaces, and what it leaves alone.
describe('redactText', () => {
  const cases: Array<[string, string, string]> = [
    ['an e-mail address', 'Write to alice.smith+docs@mail.example.com today.', 'Write to [email] today.'],
    ['an international phone number', 'Call +44 20 7946 0958 or +1 (415) 555-2671.', 'Call [phone] or [phone].'],
    ['a North American national number', 'Support: (415) 555-0132.', 'Support: [phone].'],
    ['an OpenAI-style key', 'export OPENAI_API_KEY=sk-proj-Ab3dEf5hIj7lMn9pQr1tUv3x', 'export OPENAI_API_KEY=[secret]'],
    ['a GitHub token', 'token ghp_16C7e42F292c6912E7710c838347Ae178B4a here', 'token [secret] here'],
    ['an AWS access key id', 'aws_access_key_id = AKIAIOSFODNN7EXAMPLE', 'aws_access_key_id = [secret]'],
    ['a Slack token', 'xoxb-123456789012-1234567890123-AbCdEfGhIjKl', '[secret]'],
    ['a bearer token', 'Authorization: Bearer 4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c', 'Authorization: Bearer [secret]'],
    ['a JSON Web Token', 'jwt: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U end', 'jwt: [secret] end'],
    ['a secret assigned to a key', '"client_secret": "a8F3kL9qZ2xW7vB1nM4p"', '"client_secret": "[secret]"'],
    ['a private key block', 'key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\nend', 'key:\n[secret]\nend'],
  ];
  for (const [what, input, expected] of cases) {
    it(`replaces ${what}`, () => expect(redactText(input)).toBe(expected));
  }

  it('leaves prose, versions, dates, prices and words like "token" alone', () => {
    const text =
      'Version 1.2.3 was released on 2024-05-01 for $1,000,000. Pass the token in the header; the password: must be long. ' +
      'Order 12345 shipped. Use Bearer tokens for auth. skiing is fun; ask-me-anything.';
    expect(redactText(text)).toBe(text);
  });
});
