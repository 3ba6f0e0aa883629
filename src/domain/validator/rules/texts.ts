import { isBlank } from '../findings/finding.js';
import { child, collapsedHead, finding, shorten, type RuleFamily } from './rule.js';

/** GPT Actions: endpoint summary and description at most 300 characters (docs/platform-rules.md). */
export const GPT_ACTIONS_TEXT_MAX = 300;
/** Copilot Studio: summary at most 80 characters. */
export const COPILOT_STUDIO_SUMMARY_MAX = 80;

/**
 * summary-missing, description-missing, summary-equals-description, summary-too-long,
 * description-too-long: the text a model reads to choose a tool.
 */
export const textRules: RuleFamily = {
  rules: {
    'summary-missing': 'An operation has no summary: the tool has no short name (Copilot Studio requires one).',
    'description-missing': 'An operation has no description: the model has only its name to decide when to call it.',
    'summary-equals-description': 'The description repeats the summary (Copilot Studio requires them to differ).',
    'summary-too-long': "A summary is longer than a tool's short name should be (Copilot Studio 80, GPT Actions 300).",
    'description-too-long': 'A description is over the 300 characters GPT Actions takes.',
  },
  check(ctx) {
    const { endpoints, sources } = ctx;
    for (let i = 0; i < endpoints.length; i++) {
      const e = endpoints[i]!;
      const source = sources[i]!; // its pointer is built only for a finding
      const noSummary = isBlank(e.name);
      const noDescription = isBlank(e.description);
      if (noSummary) {
        ctx.emit(
          finding(
            'summary-missing',
            'error',
            i,
            source.pointer,
            'No summary: the model sees no short name for the tool, and Copilot Studio requires one.',
            ['copilot_studio'],
            noDescription ? null : summaryFrom(e.description),
          ),
        );
      }
      if (noDescription) {
        ctx.emit(
          finding(
            'description-missing',
            'error',
            i,
            source.pointer,
            noSummary
              ? 'No description and no summary: the model has only the tool name to decide when to call it; Copilot Studio requires both.'
              : 'No description: the model has only the summary to decide when to call the tool; Copilot Studio requires both.',
            ['copilot_studio'],
          ),
        );
      }
      if (!noSummary && !noDescription && e.name.trim() === e.description.trim()) {
        ctx.emit(
          finding(
            'summary-equals-description',
            'error',
            i,
            child(source.pointer, 'description'),
            'The description repeats the summary: it tells the model nothing more, and Copilot Studio requires them to differ.',
            ['copilot_studio'],
          ),
        );
      }
      if (!noSummary && e.name.length > COPILOT_STUDIO_SUMMARY_MAX) {
        const overGpt = e.name.length > GPT_ACTIONS_TEXT_MAX;
        ctx.emit(
          finding(
            'summary-too-long',
            overGpt ? 'error' : 'warning',
            i,
            child(source.pointer, 'summary'),
            `The summary is ${e.name.length} characters: a tool's short name should be short (Copilot Studio: 80${overGpt ? ', GPT Actions: 300' : ''}).`,
            overGpt ? ['gpt_actions', 'copilot_studio'] : ['copilot_studio'],
            ctx.shorten(e.name, COPILOT_STUDIO_SUMMARY_MAX),
          ),
        );
      }
      if (!noDescription && e.description.length > GPT_ACTIONS_TEXT_MAX) {
        ctx.emit(
          finding(
            'description-too-long',
            'error',
            i,
            child(source.pointer, 'description'),
            `The description is ${e.description.length} characters; GPT Actions takes at most 300, and a long one costs every request context.`,
            ['gpt_actions'],
            ctx.shorten(e.description, GPT_ACTIONS_TEXT_MAX),
          ),
        );
      }
    }
  },
};

/**
 * The summary proposed from a description: its first sentence; none when that is empty, or
 * is the whole description (the summary would repeat it: `summary-equals-description`, an
 * error on the same platform).
 */
function summaryFrom(description: string): string | null {
  const summary = firstSentence(description, COPILOT_STUDIO_SUMMARY_MAX);
  return summary === '' || summary === description.trim() ? null : summary;
}

/** The description's first sentence (or its start), at most `max` characters, for a summary. */
function firstSentence(text: string, max: number): string {
  // Only the first `max + 1` characters of the sentence count (`shorten`), so the start of the
  // text is enough: a sentence end found past it leaves a sentence longer than `max` either way.
  const t = collapsedHead(text, 2 * max);
  const end = t.search(/[.!?](\s|$)/);
  return shorten(end === -1 ? t : t.slice(0, end), max).replace(/[^\p{L}\p{N}]+$/u, '');
}
