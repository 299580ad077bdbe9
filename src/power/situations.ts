import type { Config } from '../config/config.js';
import type { HostSituation, Interval, PowerSettings } from './power-plan.js';
import type { HostPower } from './power.repository.js';

/** The planner's settings from Climate's. */
export function powerSettings(config: Config): PowerSettings {
  return {
    idleMs: config.power.offIdleMinutes * 60_000,
    leadMs: config.provisioningLeadMinutes * 60_000,
    bootMs: config.power.bootSeconds * 1000,
  };
}

/**
 * What the planner needs to know of a host. Kept on whatever the backlog: every host
 * while the power plan is off, a host out of the freepool (in a reservation's pool,
 * shared, recycled) or failed, a host an admin marked always on, and one last seen
 * holding servers (unless `recheckServers`: the manager then asks the compute service).
 */
export function situationOf(
  host: HostPower,
  usage: Map<number, Interval[]>,
  planOn: boolean,
  recheckServers = false,
): HostSituation {
  return {
    state: host.state,
    changedAt: host.changedAt.getTime(),
    keepOn: !planOn || !host.managed || host.alwaysOn || (host.holdsServers && !recheckServers),
    busy: usage.get(host.hostId) ?? [],
  };
}
