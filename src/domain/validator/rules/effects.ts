import { finding, type Platform, q, type RuleFamily } from './rule.js';

/**
 * GPT Actions asks the user before calling an operation when `x-openai-isConsequential` is
 * true, and defaults it to false for GET and true for every other method (docs/platform-rules.md).
 * An operation's name says what it does, so the default is wrong where the name and the method
 * disagree:
 *
 * - confirmation-missing (warning): a GET named for a change (`deleteUser`, `GET
 *   /orders/{id}/cancel`) runs without asking the user. Fix: `true`.
 * - confirmation-unneeded (info): a POST named for a read (`searchPets`, `POST /query`) asks the
 *   user on every call, with no "Always allow". Fix: `false`.
 *
 * The name is the operationId's verb: after its last `.`, `:` or `/` (`drive.files.delete`), the
 * first `_`-separated part that starts with a verb (Azure's `SyncMembers_Get`; not a leading
 * `GET_`), else its first word. Only when that is no verb do other words count: the id's last
 * word (`usersDelete`) and the path's last segment when it is one word that is only ever a verb
 * (`/orders/{id}/cancel`, not `/store/order`) or a custom method (`/{name}:cancel`). An
 * explicit `x-openai-isConsequential` is never second-guessed.
 */
export const effectRules: RuleFamily = {
  rules: {
    'confirmation-missing': 'A GET named for a change: GPT Actions calls it without asking the user.',
    'confirmation-unneeded': 'A POST named for a read: GPT Actions asks the user before every call of it.',
  },
  check(ctx) {
    for (let i = 0; i < ctx.endpoints.length; i++) {
      const e = ctx.endpoints[i]!;
      if (e.type !== 'GET' && e.type !== 'POST') continue;
      const source = ctx.sources[i]!;
      const flag = source.operation[CONSEQUENTIAL];
      // The id's verb says what the operation does; the other words only when it has none.
      const { verb, others } = nameWords(e.operationId, e.type, e.path);
      if (e.type === 'GET') {
        const changes = verb !== null ? (CHANGING.has(verb) ? verb : undefined) : others.find((w) => ONLY_CHANGING.has(w));
        if (changes === undefined || flag === true) continue;
        ctx.emit(
          finding(
            'confirmation-missing',
            'warning',
            i,
            source.pointer,
            `A GET named for a change (${q(changes)}): GPT Actions calls a GET without asking the user unless ${CONSEQUENTIAL} is true.`,
            GPT_ACTIONS,
            true,
          ),
        );
        continue;
      }
      // Confirmation is dropped only for a name with no sign of a change anywhere.
      if (flag === false || (verb !== null && CHANGING.has(verb)) || others.some((w) => ONLY_CHANGING.has(w))) continue;
      const reads = verb !== null ? (READING.has(verb) ? verb : undefined) : others.find((w) => ONLY_READING.has(w));
      if (reads === undefined) continue;
      ctx.emit(
        finding(
          'confirmation-unneeded',
          'info',
          i,
          source.pointer,
          `A POST named for a read (${q(reads)}): GPT Actions asks the user before every call of it, with no “Always allow”, unless ${CONSEQUENTIAL} is false.`,
          GPT_ACTIONS,
          false,
        ),
      );
    }
  },
};

/** GPT Actions' operation extension: ask the user before each call (docs/platform-rules.md). */
export const CONSEQUENTIAL = 'x-openai-isConsequential';
const GPT_ACTIONS: readonly Platform[] = ['gpt_actions'];

/** Verbs of operations that change something. */
const CHANGING = new Set(
  (
    'delete remove destroy purge erase drop create add insert update modify edit patch put replace rename move ' +
    'send publish unpublish submit pay refund transfer cancel revoke approve reject decline accept archive ' +
    'unarchive restore reset execute run trigger start restart kill terminate enable disable activate deactivate ' +
    'subscribe unsubscribe invite assign unassign import unlock ban unban unblock follow unfollow unlike reserve ' +
    'buy purchase sell merge close reopen mute unmute clear flush register unregister logout deploy rollback apply ' +
    'increment decrement write save refresh reindex rebuild regenerate rotate renew retry resend resume pause suspend'
  ).split(' '),
);

/** Changing verbs that are never also nouns a path or an id names a thing by (`order`, `archive`, `merge` are): read anywhere in a name. */
const ONLY_CHANGING = new Set(
  (
    'delete remove destroy purge cancel revoke approve reject decline unarchive restore reset execute run trigger ' +
    'start stop restart terminate enable disable activate deactivate subscribe unsubscribe send publish unpublish submit pay ' +
    'refund transfer logout deploy rollback reopen mute unmute unfollow lock unlock ban unban unblock create update add invite ' +
    'assign unassign kill flush'
  ).split(' '),
);

/** Verbs that name neither a change nor a read the rules act on: the operationId's first word is still its verb. */
const OTHER_VERBS = new Set('get fetch show view describe download export check verify has is exists watch head set'.split(' '));

/** Reading verbs that are never also nouns or states (`list`, `count`, `read` are): read anywhere in a name. */
const ONLY_READING = new Set(
  (
    'search query lookup preview estimate calculate compute validate translate render summarize summarise ' +
    'classify analyze analyse detect suggest autocomplete'
  ).split(' '),
);

/** Verbs of operations that only read or compute, as an operationId's first word. */
const READING = new Set([...ONLY_READING, 'find', 'list', 'count', 'match', 'filter', 'retrieve', 'read', 'simulate']);

function isVerb(word: string): boolean {
  return CHANGING.has(word) || READING.has(word) || OTHER_VERBS.has(word);
}

const WORD = /[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+/;
const WORDS = new RegExp(WORD.source, 'g');

/** The words of `text`: runs of letters and digits, camelCase split, lower case. */
function words(text: string): string[] {
  return (text.match(WORDS) ?? []).map((w) => w.toLowerCase());
}

/** `words(text)[0]`, without splitting the rest. */
function firstWord(text: string): string | undefined {
  return WORD.exec(text)?.[0].toLowerCase();
}

/**
 * An operation's name (see effectRules): the operationId's verb (null when it has none), and
 * the other words that may name its action: the id's last word, when its first is no verb,
 * and the path's last segment.
 */
function nameWords(operationId: string | null, method: string, path: string): { verb: string | null; others: string[] } {
  const others: string[] = [];
  let verb: string | null = null;
  if (operationId !== null) {
    const name = operationId.slice(Math.max(operationId.lastIndexOf('.'), operationId.lastIndexOf(':'), operationId.lastIndexOf('/')) + 1);
    // `Noun_Verb` (Azure's `SyncMembers_Get`, `droplets_get_Status`): the first part that starts
    // with a verb; a leading part that is the method (`GET_CreateDomain`) is no verb.
    const parts = name.split('_');
    for (let k = parts.length > 1 && parts[0]!.toUpperCase() === method ? 1 : 0; k < parts.length && verb === null; k++) {
      const first = firstWord(parts[k]!);
      if (first !== undefined && isVerb(first)) verb = first;
    }
    if (verb === null) {
      const id = words(name);
      if (id[0] !== undefined && isVerb(id[0])) verb = id[0];
      else if (id.length > 1) others.push(id[id.length - 1]!);
    }
  }
  const segment = path.slice(path.lastIndexOf('/') + 1);
  const colon = segment.lastIndexOf(':');
  // `/{name}:cancel`: a custom method (Google's API style) after the template.
  const last = colon !== -1 && !segment.slice(colon + 1).includes('{') ? segment.slice(colon + 1) : segment.includes('{') ? '' : segment;
  const literal = words(last);
  if (literal.length === 1) others.push(literal[0]!);
  return { verb, others };
}
