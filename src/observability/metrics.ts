import { Injectable } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Route label of a request no route matched (raw URLs would explode the label set). */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * Every Prometheus metric of one Climate instance, in a registry of its own (never
 * prom-client's global one: tests build many apps in one process). Services record
 * through the fields; the gauges read from the database are set at scrape time.
 */
@Injectable()
export class Metrics {
  readonly registry = new Registry();
  /** Gauges read from the database at scrape time: left out of a scrape when it fails. */
  readonly databaseRegistry = new Registry();

  readonly httpDuration = new Histogram({
    name: 'climate_http_request_duration_seconds',
    help: 'HTTP requests by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });

  readonly eventLag = new Histogram({
    name: 'climate_event_lag_seconds',
    help: "From an event's scheduled time to it being done",
    labelNames: ['type'] as const,
    buckets: [0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600],
    registers: [this.registry],
  });

  readonly events = new Counter({
    name: 'climate_events_total',
    help: 'Event attempts by type and result (done, retried, failed)',
    labelNames: ['type', 'result'] as const,
    registers: [this.registry],
  });

  readonly managerPolls = new Counter({
    name: 'climate_manager_polls_total',
    help: "The manager's polls for due events, by result (ok, failed)",
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  readonly healingMoves = new Counter({
    name: 'climate_healing_moves_total',
    help:
      'Allocations on failed hosts that a heal moved (moved) or could not move (unmovable; ' +
      'counted again by each heal while they stay)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  readonly novaServiceEvents = new Counter({
    name: 'climate_nova_service_events_total',
    help:
      'Nova service.update notifications by what they did: down, up (hosts changed), ' +
      'unchanged, ignored (not a compute host failure) or failed (retried)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  readonly maintenanceRuns = new Counter({
    name: 'climate_maintenance_runs_total',
    help: 'Periodic upkeep runs (heal, recycle, trusts, deletes) by result (ok, failed)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  readonly periodicRuns = new Counter({
    name: 'climate_periodic_runs_total',
    help: "The manager's periodic jobs' runs by job and result (ok, failed)",
    labelNames: ['job', 'result'] as const,
    registers: [this.registry],
  });

  readonly periodicSeconds = new Histogram({
    name: 'climate_periodic_run_seconds',
    help: "How long each run of the manager's periodic jobs took",
    labelNames: ['job'] as const,
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60],
    registers: [this.registry],
  });

  readonly claims = new Counter({
    name: 'climate_claims_total',
    help: 'Instance slot claims by result (granted, refused for want of a slot, released)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  readonly notificationsPublished = new Counter({
    name: 'climate_notifications_published_total',
    help: 'Notifications the broker confirmed (a message sent to several topics counts once)',
    registers: [this.registry],
  });

  readonly notificationBacklog = new Gauge({
    name: 'climate_notification_backlog',
    help: 'Notifications in the outbox not yet published to the broker, read at scrape time',
    registers: [this.databaseRegistry],
  });

  readonly brokerProblems = new Counter({
    name: 'climate_broker_problems_total',
    help:
      'RabbitMQ failures by link (notifications, nova) and reason (refused, access_refused, ' +
      'not_found, blocked, channel_closed, heartbeat_timeout, timeout, unreachable, ' +
      'connection_lost); each is retried with backoff',
    labelNames: ['link', 'reason'] as const,
    registers: [this.registry],
  });

  readonly brokerConnected = new Gauge({
    name: 'climate_broker_connected',
    help: '1 while the link (notifications, nova) has a working broker connection, else 0',
    labelNames: ['link'] as const,
    registers: [this.registry],
  });

  readonly webhookDeliveries = new Counter({
    name: 'climate_webhook_deliveries_total',
    help:
      'Webhook POSTs by result (delivered: a 2xx; refused: another status; timeout; ' +
      'unreachable: no connection)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  readonly webhookBacklog = new Gauge({
    name: 'climate_webhook_backlog',
    help: 'Notifications webhook receivers have yet to take (summed over receivers)',
    registers: [this.registry],
  });

  readonly poolHosts = new Gauge({
    name: 'climate_pool_hosts',
    help: 'Hosts by pool (freepool, shared, recycle, reservation, none) and whether reservable',
    labelNames: ['pool', 'reservable'] as const,
    registers: [this.databaseRegistry],
  });

  readonly leases = new Gauge({
    name: 'climate_leases',
    help: 'Leases by status',
    labelNames: ['status'] as const,
    registers: [this.databaseRegistry],
  });

  readonly degradedLeases = new Gauge({
    name: 'climate_leases_degraded',
    help: 'Leases with a reservation on a failed host that healing could not move',
    registers: [this.databaseRegistry],
  });

  readonly powerTransitions = new Counter({
    name: 'climate_power_transitions_total',
    help: 'Power transitions this manager saw through, by target (on, off) and result (done, failed)',
    labelNames: ['to', 'result'] as const,
    registers: [this.registry],
  });

  /** Reads the power plan's gauges at scrape time; set by the power module. */
  powerReader: (() => void) | null = null;

  readonly powerHosts = new Gauge({
    name: 'climate_power_hosts',
    help: 'Hosts by power state (on, off, booting, stopping), read at scrape time',
    labelNames: ['state'] as const,
    registers: [this.databaseRegistry],
    collect: () => this.powerReader?.(),
  });

  readonly powerOffHostHours = new Gauge({
    name: 'climate_power_off_host_hours',
    help: 'Host-hours powered off over the past 30 days and planned off over the next 30 (window)',
    labelNames: ['window'] as const,
    registers: [this.databaseRegistry],
    collect: () => this.powerReader?.(),
  });

  readonly dbPool = new Gauge({
    name: 'climate_db_pool_connections',
    help: 'Database pool: connections open (total) and idle, and the pool size (max)',
    labelNames: ['state'] as const,
    registers: [this.registry],
  });

  readonly dbPoolWaiting = new Gauge({
    name: 'climate_db_pool_waiting',
    help: 'Queries waiting for a free database connection',
    registers: [this.registry],
  });

  readonly collectErrors = new Counter({
    name: 'climate_metrics_collect_errors_total',
    help: 'Scrapes whose database gauges were skipped (the database failed or was slow)',
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }
}
