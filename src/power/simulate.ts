/**
 * `npm run simulate:power`: a year of synthetic lease load on a pool at 30 %, 60 % and
 * 90 % use, the power plan run every 5 minutes through the planner the manager uses;
 * prints the share of host-hours saved against keeping every host on. Options:
 * SIM_HOSTS (40), SIM_DAYS (365), SIM_SEED (1), SIM_IDLE_MINUTES (60),
 * SIM_BOOT_SECONDS (600), SIM_LEAD_MINUTES (15), SIM_ALWAYS_ON (0: hosts marked always on).
 */
import { simulate, type SimulationResult } from './simulation.js';

const number = (name: string, fallback: number): number => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a number >= 0`);
  return value;
};

const pct = (x: number) => `${(x * 100).toFixed(1)} %`;

function main(): void {
  const hosts = number('SIM_HOSTS', 40);
  const days = number('SIM_DAYS', 365);
  const settings = {
    idleMs: number('SIM_IDLE_MINUTES', 60) * 60_000,
    bootMs: number('SIM_BOOT_SECONDS', 600) * 1000,
    leadMs: number('SIM_LEAD_MINUTES', 15) * 60_000,
  };
  console.log(
    `${hosts} hosts, ${days} days, idle ${settings.idleMs / 60_000} min, boot ` +
      `${settings.bootMs / 1000} s, lead ${settings.leadMs / 60_000} min, ` +
      `${number('SIM_ALWAYS_ON', 0)} always on, plan every 5 min`,
  );
  const rows: [SimulationResult, SimulationResult][] = [];
  for (const targetUse of [0.3, 0.6, 0.9]) {
    const t0 = Date.now();
    const run = (powerPlan: boolean) =>
      simulate({
        hosts,
        days,
        targetUse,
        settings,
        maxTransitionsPerMinute: 10,
        stepMinutes: 5,
        seed: number('SIM_SEED', 1),
        powerPlan,
        alwaysOn: number('SIM_ALWAYS_ON', 0),
      });
    rows.push([run(false), run(true)]);
    console.log(`  ${pct(targetUse)}: always-on and power plan simulated in ${Date.now() - t0} ms`);
  }
  console.log(
    '\n| asked use | reserved | host-hours saved | leases | started later, always on → plan | ' +
      'mean delay per lease, always on → plan | transitions/host/day | late starts |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
  const minutes = (r: SimulationResult) => `${((r.delayHours * 60) / r.leases).toFixed(1)} min`;
  for (const [base, r] of rows) {
    console.log(
      `| ${pct(r.targetUse)} | ${pct(r.achievedUse)} | ${pct(r.savedShare)} | ${r.leases} | ` +
        `${pct(base.postponed / base.leases)} → ${pct(r.postponed / r.leases)} | ` +
        `${minutes(base)} → ${minutes(r)} | ${r.transitionsPerHostDay.toFixed(2)} | ${r.lateStarts} |`,
    );
  }
}

main();
