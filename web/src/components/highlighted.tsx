import { highlight } from '../lib/highlight';

/** Text with the query's words in <mark>; every piece is a text node, never parsed as HTML. */
export function Highlighted({ text, terms }: { text: string; terms: readonly string[] }) {
  return <>{highlight(text, terms).map((segment, i) => (segment.match ? <mark key={i}>{segment.text}</mark> : segment.text))}</>;
}
