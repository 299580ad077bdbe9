import { plainToInstance } from 'class-transformer';
import { validate } from 'class-validator';
import { CreateLeaseDto, UpdateLeaseDto } from './lease.dto.js';

const lease = { name: 'l', start_date: 'now', end_date: '2040-01-02 00:00' };

async function problems(cls: new () => object, body: object): Promise<string[]> {
  const errors = await validate(plainToInstance(cls, body));
  return errors.flatMap((e) => Object.values(e.constraints ?? {}));
}

describe('lease DTOs', () => {
  it('should let events through to their own checks (user-events.ts), in a create and an update', async () => {
    for (const cls of [CreateLeaseDto, UpdateLeaseDto]) {
      for (const events of [null, [], 'x', [{ event_type: 'e' }]]) {
        expect(await problems(cls, { ...lease, events })).toEqual([]);
      }
    }
  });

  it.each([
    ['255 characters', 'n'.repeat(255), true],
    ['256 characters', 'n'.repeat(256), false],
    ['255 emoji (510 UTF-16 units)', '😀'.repeat(255), true],
    ['200 letters with variation selectors (400 code points)', 'a\ufe0f'.repeat(200), false],
  ])('should count a name of %s as the column does', async (_, name, ok) => {
    for (const cls of [CreateLeaseDto, UpdateLeaseDto]) {
      const found = await problems(cls, { ...lease, name });
      expect(found.includes('name must be at most 255 characters')).toBe(!ok);
    }
  });
});
