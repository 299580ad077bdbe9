import { createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { SystemClock } from '../src/common/clock.js';
import { EventsRepository } from '../src/events/events.repository.js';

/** Event claims are judged by the database's clock, not by each replica's own. */
describe('event claims across replicas with skewed clocks', () => {
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url });
    t.clock.set(new Date());
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('should compare claims with the database clock in production', () => {
    expect(new SystemClock().shared()).toBeNull();
  });

  it('should not let a replica whose clock runs an hour ahead take a live claim', async () => {
    await t.http
      .post('/v1/leases')
      .send({ name: 'skew', start_date: 'now', end_date: '2099-01-01 00:00' })
      .expect(201);
    const events = t.app.get(EventsRepository);
    const mine = await events.claimDue(null, 'replica-a', 60_000, 10);
    expect(mine.map((e) => e.eventType)).toEqual(['start_lease']);
    // by the database's clock the claim is live for a minute: nobody takes it
    expect(await events.claimDue(null, 'replica-b', 60_000, 10)).toEqual([]);
    // judged by a clock an hour ahead (what each replica's own clock did), it would go
    const skewed = new Date(Date.now() + 3_600_000);
    const stolen = await events.claimDue(skewed, 'replica-b', 60_000, 10);
    expect(stolen.map((e) => e.id)).toEqual(mine.map((e) => e.id));
  });
});
