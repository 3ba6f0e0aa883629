/**
 * A whole number with its digits grouped by commas, as `toLocaleString('en-US')` writes it
 * ("100,000"), without Intl: the first Intl call of a process loads ICU's locale data, about
 * 9 ms here, which was a fifth of the time `copilot-service validate` takes on a small
 * document (bench/README.md).
 */
export function groupDigits(n: number): string {
  const sign = n < 0 ? '-' : '';
  const digits = String(Math.trunc(Math.abs(n)));
  let out = digits.slice(0, ((digits.length - 1) % 3) + 1);
  for (let i = out.length; i < digits.length; i += 3) out += `,${digits.slice(i, i + 3)}`;
  return sign + out;
}
