import { QueryFailedError, QueryRunnerAlreadyReleasedError } from 'typeorm';
import { isDatabaseUnavailable } from './unavailable.js';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });
const query = (driverError: Error) => new QueryFailedError('SELECT 1', [], driverError);

describe('isDatabaseUnavailable', () => {
  it.each([
    ['admin_shutdown', query(withCode('57P01'))],
    ['crash_shutdown', query(withCode('57P02'))],
    ['cannot_connect_now', withCode('57P03', 'the database system is starting up')],
    ['a class 08 connection exception', query(withCode('08006'))],
    ['a refused connection', withCode('ECONNREFUSED')],
    ['a reset connection', withCode('ECONNRESET')],
    ['a dead connection', query(new Error('Connection terminated unexpectedly'))],
    ['a connect timeout', new Error('Connection terminated due to connection timeout')],
    ['a pool timeout', new Error('timeout exceeded when trying to connect')],
    ['an error of every address', new AggregateError([withCode('ECONNREFUSED')], 'connect')],
    ['a wrapped cause', new Error('on_start failed', { cause: withCode('ECONNRESET') })],
    ['a statement timeout', query(withCode('57014'))],
    ['a runner released when its connection died', new QueryRunnerAlreadyReleasedError()],
  ])('should say yes for %s', (_what, error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it.each([
    ['a unique violation', query(withCode('23505'))],
    ['a serialization failure', query(withCode('40001'))],
    ['a syntax error', query(withCode('42601'))],
    ['a plain bug', new TypeError('x is undefined')],
    ['no error at all', undefined],
    ['a string', 'Connection terminated'],
    [
      'an HTTP call refused',
      new Error('x', { cause: new TypeError('fetch failed', { cause: withCode('ECONNREFUSED') }) }),
    ],
  ])('should say no for %s', (_what, error) => {
    expect(isDatabaseUnavailable(error)).toBe(false);
  });
});
