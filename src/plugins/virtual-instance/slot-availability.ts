import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Clock } from '../../common/clock.js';
import { formatWireDate, LATEST_DATE, parseInputDate } from '../../common/dates.js';
import { parseDuration } from '../../common/durations.js';
import { InvalidInput } from '../../common/errors.js';
import { CONFIG } from '../../config/config.module.js';
import type { Config } from '../../config/config.js';
import { sql, SqlParams } from '../../database/sql.js';
import { OCCUPANCY, occupied } from '../../pools/host-usage.js';
import { hostJoin } from '../../pools/hosts.repository.js';
import { combine, HostQueryBuilder, type HostQuery } from '../../requirements/host-query.js';
import type { SlotAvailabilityBody } from './dto/slot-availability.dto.js';
import { validateInstanceParams } from './instance-params.js';
import { pickSlots } from './pick-slots.js';
import { SlotsRepository } from './slots.repository.js';

/** Candidate starts looked at per answer: `from` and the next allocation ends. */
export const MAX_CANDIDATES = 200;
const MINUTE = 60_000;

function limitOf(value: unknown): number {
  if (value === undefined || value === '') return 5;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 100) {
    throw new InvalidInput('limit must be a whole number from 1 to 100');
  }
  return n;
}

/** Up to the next whole minute (lease dates are given to the minute). */
const ceilMinute = (d: Date) => new Date(Math.ceil(d.getTime() / MINUTE) * MINUTE);

/**
 * The earliest windows where `amount` instance slots of a size fit, read-only, by the
 * create's own rules: at each candidate start (`from`, then each time an allocation on
 * a matching host ends, to the minute) the hosts `SlotsRepository.capacity` finds for the window plus
 * the cleaning time, packed by `pickSlots`, as the create places a new reservation.
 */
@Injectable()
export class SlotAvailability {
  constructor(
    private readonly dataSource: DataSource,
    private readonly slots: SlotsRepository,
    private readonly queries: HostQueryBuilder,
    private readonly clock: Clock,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  async windows(query: Record<string, unknown>): Promise<SlotAvailabilityBody> {
    const now = this.clock.now();
    const { duration: durationText, limit: limitText, start, ...values } = query;
    const duration = parseDuration('duration', durationText);
    const limit = limitOf(limitText);
    const params = validateInstanceParams(values);
    const from = ceilMinute(start === undefined ? now : parseInputDate(start, now));
    const latest = LATEST_DATE.getTime() - duration - this.config.cleaningTimeMinutes * MINUTE;
    if (from.getTime() >= latest) {
      throw new InvalidInput('start plus duration must end before 10000-01-01');
    }
    const em = this.dataSource.manager;
    const q = await this.queries.build(em, combine(params.resource_properties));
    const found: Date[] = [];
    for (const t of await this.candidates(q, from, latest)) {
      const window = { start: t, end: new Date(t.getTime() + duration) };
      const during = occupied(window, this.config.cleaningTimeMinutes);
      const need = { amount: params.amount, oneHost: params.affinity === true };
      const hosts = await this.slots.capacity(em, q, during, params, { need });
      if (pickSlots(hosts, params.amount, params.affinity) !== null) found.push(t);
      if (found.length === limit) break;
    }
    return {
      availability: found.map((t) => ({
        start_date: formatWireDate(t),
        end_date: formatWireDate(new Date(t.getTime() + duration)),
      })),
    };
  }

  /**
   * `from`, then the minutes after it at which an allocation on a host of `q` ends (only
   * those change what fits), earliest first; past the bound, the last end of all (from
   * then on those hosts are free, so slots that can fit at all fit there).
   */
  private async candidates(q: HostQuery, from: Date, latest: number): Promise<Date[]> {
    const p = new SqlParams();
    const where = p.embed(q.where, q.params);
    const ends = `SELECT DISTINCT date_trunc('minute', upper(a.during) + interval '59.999 seconds') AS t
         FROM ${OCCUPANCY} a
         ${hostJoin('h', 'a.host_id')}
        WHERE upper(a.during) > ${p.bind(from)} AND upper(a.during) < ${p.bind(new Date(latest))}
          AND (${where})`;
    const { rows } = await sql<{ t: Date | null }>(
      this.dataSource.manager,
      `(SELECT t FROM (${ends}) e ORDER BY t LIMIT ${MAX_CANDIDATES - 2})
       UNION SELECT max(t) FROM (${ends}) e ORDER BY t`,
      p.values,
    );
    const later = rows.flatMap((r) => (r.t === null ? [] : [new Date(r.t)]));
    return [from, ...later.filter((t) => t > from)];
  }
}
