import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderFresh, type Endpoint, type Validations } from '../../../src/domain/validator/index.js';
import { fixture, FIXTURES } from './helpers.js';

/**
 * The interface's own example (interface §4.3): the 2023 Swagger Petstore with the
 * operationId of POST /pet removed. The example is abridged by hand (two of the 19
 * endpoints, two of the five descriptions, cuts marked by trailing commas); see
 * test/fixtures/validator/interface-example/README.md for where both files come from.
 */
const DIR = 'validator/interface-example/';
const CHATBOT_ID = '1ca91513-fc59-4868-9965-0112ca3393f4';
const exampleText = readFileSync(`${FIXTURES}${DIR}response-example.txt`, 'utf8');

interface Response {
  chatbot_id: string;
  all_endpoints: Endpoint[];
  validations: Record<string, unknown>;
}

/** What the HTTP route sends: the chatbot id spliced in front of the validator's text. */
function response(): { text: string; body: Response } {
  const text = `{"chatbot_id":${JSON.stringify(CHATBOT_ID)},${renderFresh(fixture(`${DIR}petstore-1.0.11-without-addPet-operationId.json`))
    .toString('utf8')
    .slice(1)}`;
  return { text, body: JSON.parse(text) as Response };
}

/** The example with the commas that mark its cuts removed: valid JSON, same bytes otherwise. */
const exampleJson = exampleText.replace(/,(\s*[\]}])/g, '$1');
const example = JSON.parse(exampleJson) as Response;

describe("the interface's validator example", () => {
  it('is reproduced byte for byte in every part it shows', () => {
    const { body } = response();
    const descriptions = body.validations.endpoints_without_description as Record<string, Endpoint>;
    const shown = {
      chatbot_id: body.chatbot_id,
      all_endpoints: body.all_endpoints.slice(0, 2),
      validations: {
        endpoints_without_operation_id: body.validations.endpoints_without_operation_id,
        endpoints_without_description: { 5: descriptions['5'], 7: descriptions['7'] },
        endpoints_without_name: body.validations.endpoints_without_name,
        auth_type: body.validations.auth_type,
      },
    };
    expect(`${JSON.stringify(shown, null, 2)}\n`).toBe(exampleJson);
  });

  it('cuts exactly the entries this document adds', () => {
    const { body } = response();
    expect(body.all_endpoints).toHaveLength(19);
    expect(example.all_endpoints).toHaveLength(2);
    expect(Object.keys(body.validations.endpoints_without_operation_id as object)).toEqual(['1']);
    expect(Object.keys(body.validations.endpoints_without_description as object)).toEqual(['5', '7', '14', '15', '16']);
    expect(Object.keys(example.validations.endpoints_without_description as object)).toEqual(['5', '7']);
    expect([14, 15, 16].map((i) => body.all_endpoints[i]!.operationId)).toEqual(['loginUser', 'logoutUser', 'getUserByName']);
  });

  it('keeps the key order of the interface, then the additive findings', () => {
    const { text, body } = response();
    expect(Object.keys(body)).toEqual(['chatbot_id', 'all_endpoints', 'validations']);
    expect(Object.keys(body.validations)).toEqual([
      'endpoints_without_operation_id',
      'endpoints_without_description',
      'endpoints_without_name',
      'auth_type',
      'base_url',
      'readiness',
      'findings',
    ]);
    const { readiness, findings } = body.validations as unknown as Validations;
    expect(Object.keys(readiness)).toEqual(['score', 'platforms', 'worst_endpoints']);
    expect(Object.keys(readiness.platforms)).toEqual(['openai', 'gpt_actions', 'anthropic', 'gemini', 'mcp', 'copilot_studio']);
    for (const f of findings) expect(Object.keys(f)).toEqual(['rule', 'severity', 'endpoint', 'pointer', 'message', 'platforms', 'fix']);
    expect(body.validations.base_url).toBe('https://petstore3.swagger.io/api/v3');
    expect(Object.keys(body.all_endpoints[0]!)).toEqual(Object.keys(example.all_endpoints[0]!));
    expect(text.startsWith(`{"chatbot_id":"${CHATBOT_ID}","all_endpoints":[{"operationId":"updatePet","type":"PUT"`)).toBe(true);
  });
});
