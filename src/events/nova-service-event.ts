import { CLIMATE_DISABLE_PREFIX } from '../compute/compute-driver.js';

/** What a Nova `service.update` says about a compute host. */
export interface ServiceChange {
  /** The compute service's host (Climate's `service_name`). */
  host: string;
  /** Disabled or forced down: nothing new may run there. */
  down: boolean;
}

export type ServiceNews = ServiceChange | { ignored: string };

function record(value: unknown): Record<string, unknown> | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/**
 * Reads one message of Nova's versioned notifications: an oslo.messaging 2.0 envelope
 * (`oslo.message` holds the notification as JSON text) or a bare notification. Only a
 * `service.update` of a `nova-compute` service counts; a service Climate disabled itself
 * (reason starting with `climate:`, its power plan) is not a failure.
 */
export function readServiceUpdate(body: Buffer | string): ServiceNews {
  const outer = record(parse(body.toString()));
  if (outer === null) return { ignored: 'not a JSON object' };
  const inner = typeof outer['oslo.message'] === 'string' ? outer['oslo.message'] : null;
  const message = inner === null ? outer : record(parse(inner));
  if (message === null) return { ignored: 'oslo.message is not a JSON object' };
  if (message.event_type !== 'service.update') return { ignored: 'not a service.update' };
  const data = record(record(message.payload)?.['nova_object.data']);
  if (data === null) return { ignored: 'no nova_object.data in the payload' };
  if (data.binary !== 'nova-compute') return { ignored: 'not a nova-compute service' };
  if (typeof data.host !== 'string' || data.host === '') return { ignored: 'no host' };
  const forcedDown = data.forced_down === true;
  const disabled = data.disabled === true;
  const reason = typeof data.disabled_reason === 'string' ? data.disabled_reason : '';
  if (disabled && !forcedDown && reason.startsWith(CLIMATE_DISABLE_PREFIX)) {
    return { ignored: 'disabled by Climate' };
  }
  return { host: data.host, down: disabled || forcedDown };
}

/**
 * The server of an `instance.create.end`, or of an `instance.update`, that says it is now
 * ACTIVE (state `active`), from the same kind of message; null for anything else.
 */
export function readServerActive(body: Buffer | string): string | null {
  const outer = record(parse(body.toString()));
  const inner = typeof outer?.['oslo.message'] === 'string' ? outer['oslo.message'] : null;
  const message = inner === null ? outer : record(parse(inner));
  const type = message?.event_type;
  if (type !== 'instance.create.end' && type !== 'instance.update') return null;
  const data = record(record(message?.payload)?.['nova_object.data']);
  if (data?.state !== 'active' || typeof data.uuid !== 'string' || data.uuid === '') return null;
  return data.uuid;
}
