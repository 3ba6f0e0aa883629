import { describe, expect, it } from 'vitest';
import { hasFindings, parseDocument, validateDocument, validationSummary } from '../../../src/domain/validator/index.js';
import { fixture } from './helpers.js';

const validate = (path: string) => validateDocument(parseDocument(fixture(path)));

describe('validationSummary', () => {
  it('counts each flag map, the endpoints with any finding, and carries auth type and base URL', () => {
    expect(validationSummary(validate('validator/cases/operation-ids.json'))).toEqual({
      endpoints: 10,
      flagged_endpoints: 7,
      findings: {
        endpoints_without_operation_id: 0,
        endpoints_without_description: 0,
        endpoints_without_name: 0,
        endpoints_with_duplicate_operation_id: 4,
        endpoints_with_invalid_operation_id: 5,
      },
      auth_type: 'none',
      base_url: null,
      has_findings: true,
    });
  });

  it('has no findings when every map is empty and the document names a server', () => {
    const result = validate('specs/petstore3.json');
    expect(validationSummary(result)).toMatchObject({ endpoints: 19, flagged_endpoints: 0, has_findings: false });
    expect(hasFindings(result)).toBe(false);
  });

  it('counts a missing server (base_url null) as a finding', () => {
    const result = validate('validator/cases/servers-none.json');
    expect(validationSummary(result)).toMatchObject({ endpoints: 0, flagged_endpoints: 0, has_findings: true });
  });
});
