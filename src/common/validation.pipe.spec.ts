import type { ArgumentMetadata } from '@nestjs/common';
import { IsDefined, IsOptional, IsString } from 'class-validator';
import { leftOut, Present, WellFormed } from './dto/rules.js';
import { InvalidInput } from './errors.js';
import { BodyRules, validationPipe } from './validation.pipe.js';

class Strict {
  @IsDefined({ message: 'Missing parameter name' })
  @IsString({ message: 'name must be a string' })
  name!: string;
}

@BodyRules({ otherKeys: 'ignored' })
class Lenient {
  @Present('id')
  @WellFormed((id) => (typeof id === 'string' ? null : 'Malformed parameter id'))
  id!: string;
}

@BodyRules({
  otherKeys: {
    check: (key, value) =>
      typeof value === 'string' ? null : new InvalidInput(`${key} must be text`, 'BadExtra'),
  },
  none: 'empty',
})
class Open {
  @IsOptional()
  @WellFormed((n) => (Number.isInteger(n) ? null : 'Malformed parameter n'), 'Malformed', leftOut)
  n?: number;
}

const body = (metatype: ArgumentMetadata['metatype']): ArgumentMetadata => ({
  type: 'body',
  metatype,
});

async function refusal(value: unknown, metatype: ArgumentMetadata['metatype']) {
  try {
    await validationPipe.transform(value, body(metatype));
  } catch (error) {
    const e = error as InvalidInput;
    return { message: e.message, name: e.errorName };
  }
  throw new Error('validated');
}

describe('validationPipe', () => {
  it('should refuse unknown keys of a class without rules, as the lease bodies have it', async () => {
    expect(await refusal({ name: 'a', x: 1 }, Strict)).toEqual({
      message: 'Unknown parameter x',
      name: 'InvalidInput',
    });
    expect(await refusal({}, Strict)).toEqual({
      message: 'Missing parameter name',
      name: 'MissingParameter',
    });
  });

  it("should name the error by its rules' error name when every problem shares it", async () => {
    expect(await refusal({ id: 5 }, Lenient)).toEqual({
      message: 'Malformed parameter id',
      name: 'MalformedParameter',
    });
    expect(await refusal({ n: 1.5, x: 2 }, Open)).toEqual({
      message: 'x must be text; Malformed parameter n',
      name: 'InvalidInput',
    });
  });

  it('should drop the other keys of a class that ignores them', async () => {
    const out = await validationPipe.transform({ id: 'a', x: 1 }, body(Lenient));
    expect(out).toEqual({ id: 'a' });
  });

  it('should keep the other keys as sent once checked, whatever their names', async () => {
    const sent = { n: 2, constructor: 'c', toString: 't', rack: 'r1' };
    expect(await validationPipe.transform(sent, body(Open))).toBe(sent);
    expect(await refusal({ rack: 1 }, Open)).toEqual({
      message: 'rack must be text',
      name: 'BadExtra',
    });
  });

  it('should refuse a body that is not a JSON object when its class has rules', async () => {
    const notObject = { message: 'The body must be a JSON object', name: 'InvalidInput' };
    expect(await refusal([], Lenient)).toEqual(notObject);
    expect(await refusal(undefined, Lenient)).toEqual(notObject);
    expect(await refusal([], Open)).toEqual(notObject);
    // none: 'empty' takes no body as {}.
    expect(await validationPipe.transform(undefined, body(Open))).toEqual({});
  });
});
