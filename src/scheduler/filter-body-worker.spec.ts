import { LONE_SURROGATE } from '../common/storable.js';
import { parseFilterBody, SMALL_PART_LIMIT } from './filter-body-worker.js';

const parse = (text: string) =>
  parseFilterBody(Buffer.from(text), LONE_SURROGATE, SMALL_PART_LIMIT);

describe('parseFilterBody', () => {
  it.each([
    ['a host list', '{"project_id":"p","hosts":["a","b"]}', ['a', 'b']],
    ['one host', '{"project_id":"p","hosts":"a"}', 'a'],
    ['null hosts', '{"project_id":"p","hosts":null}', null],
    ['no hosts', '{"project_id":"p"}', undefined],
  ])('should keep the body when it has %s', (_what, text, hosts) => {
    expect(parse(text)).toEqual({ ok: true, hosts, rest: { project_id: 'p' } });
  });

  it.each([
    ['malformed JSON', '{"hosts":', 400, 'BadRequest'],
    ['an array', '[1,2]', 400, 'InvalidInput'],
    ['a string', '"x"', 400, 'InvalidInput'],
    ['numbers for hosts', '{"hosts":[0,0,0]}', 400, 'InvalidInput'],
    ['objects for hosts', '{"hosts":[{},{}]}', 400, 'InvalidInput'],
    ['a NUL in a host', '{"hosts":["a\\u0000"]}', 400, 'MalformedParameter'],
    ['a lone surrogate in a host', '{"hosts":["\\ud800"]}', 400, 'MalformedParameter'],
    [
      'a large part besides hosts',
      `{"hints":{"x":"${'y'.repeat(SMALL_PART_LIMIT)}"}}`,
      413,
      'PayloadTooLarge',
    ],
  ])('should refuse %s', (_what, text, status, name) => {
    expect(parse(text)).toMatchObject({ ok: false, status, name });
  });
});
