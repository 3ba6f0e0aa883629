import { describe, expect, it } from 'vitest';
import { hasFindings, parseDocument, validateDocument, validationSummary } from '../../../src/domain/validator/index.js';
import { fixture } from './helpers.js';

const validate = (path: string) => validateDocument(parseDocument(fixture(path)));

describe('validationSummary', () => {
  it('counts each flag map, the endpoints with any finding, and carries auth type and base URL', () => {
    expect(validationSummary(validate('validator/cases/operation-ids.json'))).toEqual({
      endpoints: 10,
      flagged_endpoints: 8,
      findings: {
        endpoints_without_operation_id: 0,
        endpoints_without_description: 0,
        endpoints_without_name: 0,
      },
      rules: { 'operation-id-invalid': 4, 'operation-id-duplicate': 5, 'operation-id-too-long': 1, 'server-missing': 1 },
      errors: 10,
      warnings: 1,
      score: expect.any(Number),
      auth_type: 'none',
      base_url: null,
      has_findings: true,
    });
  });

  it('has no findings when every map is empty and no rule finds an error', () => {
    const result = validate('specs/nl_business_gov.json');
    expect(validationSummary(result)).toMatchObject({ endpoints: 4, flagged_endpoints: 0, has_findings: false, score: 100 });
    expect(hasFindings(result)).toBe(false);
  });

  it('counts an error-severity rule finding, not warnings alone', () => {
    const petstore = validate('specs/petstore3.json');
    expect(validationSummary(petstore)).toMatchObject({ has_findings: true });
    expect(hasFindings(petstore)).toBe(true);
    const onlyWarnings = validateDocument(
      parseDocument({
        bytes: Buffer.from(
          JSON.stringify({
            openapi: '3.0.3',
            info: { title: 't', version: '1' },
            servers: [{ url: '/v1' }],
            paths: { '/a': { get: { operationId: 'getA', summary: 'Get A', description: 'Gets the A.' } } },
          }),
        ),
        fileName: 'x.json',
      }),
    );
    expect(onlyWarnings.validations.findings.map((f) => `${f.rule}:${f.severity}`)).toEqual(['server-relative:warning']);
    expect(validationSummary(onlyWarnings)).toMatchObject({ errors: 0, warnings: 1, has_findings: false });
    expect(hasFindings(onlyWarnings)).toBe(false);
  });

  it('counts a missing server (base_url null) as a finding', () => {
    const result = validate('validator/cases/servers-none.json');
    expect(validationSummary(result)).toMatchObject({ endpoints: 0, flagged_endpoints: 0, has_findings: true });
  });
});
