import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { FastifyInstance } from 'fastify';
import { CopilotSummary, copilotSummaries, MAX_SUMMARY_IDS, parseSummaryIds } from '../../domain/copilots/copilot-summaries.js';
import type { Storage } from '../../storage/database.js';
import { botLimit, type AccessHook } from '../auth.js';
import { errorResponses, jsonAnswer } from '../schemas.js';

const SummariesQuery = Type.Object(
  {
    ids: Type.String({
      minLength: 1,
      maxLength: MAX_SUMMARY_IDS * 37,
      description: `Copilot ids, comma-separated (at most ${MAX_SUMMARY_IDS})`,
    }),
  },
  { additionalProperties: false },
);

/** GET /backend/api/copilots/summaries: what the dashboard's list shows beside each copilot (issue 17 §3). */
export function copilotSummaryRoutes(instance: FastifyInstance, deps: { storage: Storage; access: AccessHook }): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  const { storage, access } = deps;

  app.get(
    '/backend/api/copilots/summaries',
    {
      onRequest: access({ scope: 'copilots:read' }),
      schema: {
        operationId: 'listCopilotSummaries',
        summary: "The named copilots' API descriptions at a glance",
        description:
          'For each named copilot (not deleted, visible to the key; others are left out), in the order asked: the file name its API description was uploaded under and the readiness its validation gave at upload. Read from what is stored: nothing is validated.',
        tags: ['copilots'],
        querystring: SummariesQuery,
        response: {
          200: jsonAnswer('One summary per copilot found', Type.Array(CopilotSummary)),
          ...errorResponses('invalid_request', 'unauthorized', 'forbidden'),
        },
      },
    },
    async (request) => copilotSummaries(storage.readDb, parseSummaryIds(request.query.ids), botLimit(request.principal)),
  );
}
