import { assertStorable, badText, characters, checkLength, findBadInput } from './storable.js';

describe('badText', () => {
  it.each([
    ['a\u0000b', 'contains a NUL character'],
    ['\ud800', 'is not valid Unicode'],
    ['x\udfff', 'is not valid Unicode'],
    ['\ud83d', 'is not valid Unicode'],
  ])('should refuse %j', (text, problem) => {
    expect(badText(text)).toBe(problem);
  });

  it.each(['', 'plain', '😀', '\u0001\u007f', 'é\ufe0f', '\u202e'])(
    'should accept %j when it is storable text',
    (text) => {
      expect(badText(text)).toBeNull();
    },
  );
});

describe('characters', () => {
  it('should count code points as varchar(n) does when pairs and selectors mix', () => {
    expect(characters('😀😀')).toBe(2);
    expect(characters('a\ufe0f'.repeat(200))).toBe(400);
    expect(characters('\ud800x')).toBe(2);
  });

  it('should refuse a string one character over its column, naming the field', () => {
    expect(() => checkLength('server_id', '😀'.repeat(255), 255)).not.toThrow();
    expect(() => checkLength('server_id', 'x'.repeat(256), 255)).toThrow(
      'Malformed parameter server_id: at most 255 characters',
    );
  });
});

describe('findBadInput', () => {
  it('should find a NUL in a nested value and name where it is', () => {
    expect(findBadInput({ reservations: [{ min: 'a\u0000' }] }, 'the body')).toBe(
      'the body: reservations.0.min contains a NUL character',
    );
  });

  it('should find a lone surrogate in a key', () => {
    expect(findBadInput({ a: { '\ud800': 1 } }, 'the body')).toBe(
      'the body: a key in a is not valid Unicode',
    );
  });

  it('should refuse nesting deeper than the limit without recursing', () => {
    let deep: unknown = 0;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(findBadInput(deep, 'the body')).toMatch(/is nested more than 32 levels$/);
  });

  it('should accept what PostgreSQL stores when the input is plain', () => {
    expect(findBadInput({ name: 'x', n: 1, list: [true, null, '😀'] }, 'the body')).toBeNull();
    expect(findBadInput(undefined, 'the body')).toBeNull();
  });

  it('should throw Blazar 400 MalformedParameter when asserting', () => {
    expect(() => assertStorable({ project_id: '\u0000' }, 'the query')).toThrow(
      expect.objectContaining({
        status: 400,
        errorName: 'MalformedParameter',
        message: 'The query: project_id contains a NUL character',
      }),
    );
  });
});
