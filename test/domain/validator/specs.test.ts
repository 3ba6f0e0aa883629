import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseDocument, renderResult, validateDocument, validationSummary } from '../../../src/domain/validator/index.js';
import { expectAppError, fixture, FIXTURES } from './helpers.js';

/**
 * The real documents of test/fixtures/specs against the counts in their README (taken
 * independently of this code; DESIGN §5 rules). The table is read from the README itself.
 */
interface Row {
  file: string;
  ops: number | null;
  withoutOperationId: number;
  withoutDescription: number;
  withoutSummary: number;
  authType: string;
}

function readmeRows(): Row[] {
  const readme = readFileSync(`${FIXTURES}specs/README.md`, 'utf8');
  const table = readme.slice(readme.indexOf('## Files'), readme.indexOf('## Sources'));
  const rows: Row[] = [];
  for (const line of table.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    if (cells.length < 12 || !/\.(json|yaml)$/.test(cells[1]!)) continue;
    const count = (cell: string) => (cell === '–' ? 0 : Number(/^\d+/.exec(cell)![0]));
    rows.push({
      file: cells[1]!,
      ops: cells[6] === '–' ? null : count(cells[6]!),
      withoutOperationId: count(cells[7]!),
      withoutDescription: count(cells[8]!),
      withoutSummary: count(cells[9]!),
      authType: cells[11]!,
    });
  }
  return rows;
}

const rows = readmeRows();

describe('real API descriptions (test/fixtures/specs)', () => {
  it('reads all 15 documents of the README table', () => {
    expect(rows).toHaveLength(15);
  });

  for (const row of rows.filter((r) => r.ops !== null)) {
    it(`${row.file}: ${row.ops} endpoints, ${row.withoutOperationId}/${row.withoutDescription}/${row.withoutSummary} missing, auth ${row.authType}`, () => {
      const result = validateDocument(parseDocument(fixture(`specs/${row.file}`)));
      const summary = validationSummary(result);
      expect(summary.endpoints).toBe(row.ops);
      expect(summary.findings.endpoints_without_operation_id).toBe(row.withoutOperationId);
      expect(summary.findings.endpoints_without_description).toBe(row.withoutDescription);
      expect(summary.findings.endpoints_without_name).toBe(row.withoutSummary);
      expect(summary.auth_type).toBe(row.authType);
      expect(renderResult(result).equals(Buffer.from(JSON.stringify(result)))).toBe(true);
    });
  }

  it('kubernetes.json (truncated upstream) is invalid_swagger_file at the raw newline inside its last string', () => {
    const error = expectAppError(() => parseDocument(fixture('specs/kubernetes.json')));
    // JSON.parse: "Bad control character in string literal in JSON at position 4138", the
    // newline that ends line 154 inside the unterminated string `"2`.
    expect(error.details).toEqual({ line: 154, column: 15 });
    expect(error.message).toContain('line 154, column 15');
  });

  it('openfaas (Swagger 2.0): the 10 body parameters become request bodies, none stays a parameter', () => {
    const { all_endpoints } = validateDocument(parseDocument(fixture('specs/openfaas-gateway.swagger2.yaml')));
    const withBody = all_endpoints.filter((e) => e.requestBody !== null);
    expect(withBody).toHaveLength(10);
    for (const e of all_endpoints) {
      for (const p of e.requestParameters ?? []) expect((p as { in?: string }).in).not.toBe('body');
    }
  });

  it('keeps method order as written (openfaas, trello)', () => {
    const trello = validateDocument(parseDocument(fixture('specs/trello.json'))).all_endpoints;
    const doc = JSON.parse(readFileSync(`${FIXTURES}specs/trello.json`, 'utf8')) as { paths: Record<string, object> };
    const expected = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((k) => ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'].includes(k))
        .map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(trello.map((e) => `${e.type} ${e.path}`)).toEqual(expected);
  });

  it('petstore31.yaml: odd $refs do not make it fail and stay as written (a null one and a 3.1 $id one)', () => {
    const doc = parseDocument(fixture('specs/petstore31.yaml')) as { components: { schemas: { Pet: { properties: Record<string, unknown> } } } };
    expect(doc.components.schemas.Pet.properties.petDetails).toEqual({ $ref: null });
    expect(doc.components.schemas.Pet.properties.petDetailsId).toEqual({ $ref: '/components/schemas/petdetails#pet_details_id' });
    expect(validateDocument(doc).all_endpoints).toHaveLength(6);
  });
});
