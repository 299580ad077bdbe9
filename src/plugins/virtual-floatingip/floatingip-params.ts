/** Validation of `virtual:floatingip` reservation parameters, pure. */
import { isIP } from 'node:net';
import { InvalidInput, MissingParameter } from '../../common/errors.js';
import { badText, characters } from '../../common/storable.js';
import type { JsonObject } from '../../common/json.js';

export interface FloatingIpParams {
  network_id: string;
  amount: number;
  /** Addresses that must be among the allocated ones. */
  required_floatingips: string[];
}

const KNOWN = new Set(['network_id', 'amount', 'required_floatingips']);
const MAX_INT = 2_147_483_647;
/** As Blazar's column. */
export const MAX_NETWORK_ID = 255;

function amountOf(value: unknown): number {
  if (value === undefined || value === null) throw new MissingParameter('amount');
  const n = typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_INT) {
    throw new InvalidInput('Malformed parameter amount', 'MalformedParameter');
  }
  return n;
}

/** A network id as Neutron and Blazar's column take it. */
export function networkIdOf(value: unknown, name = 'network_id'): string {
  if (value === undefined || value === null) throw new MissingParameter(name);
  if (
    typeof value !== 'string' ||
    value.trim() === '' ||
    characters(value) > MAX_NETWORK_ID ||
    badText(value) !== null
  ) {
    throw new InvalidInput(`Malformed parameter ${name}`, 'MalformedParameter');
  }
  return value;
}

/** An IPv4 or IPv6 address, as Blazar checks it. */
export function addressOf(value: unknown): string {
  // No zone index (fe80::1%eth0): PostgreSQL's inet does not take one.
  if (typeof value !== 'string' || isIP(value) === 0 || value.includes('%')) {
    throw new InvalidInput(`${String(value)} is an invalid IP format`, 'InvalidIPFormat');
  }
  return value;
}

function requiredOf(value: unknown, amount: number): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    throw new InvalidInput('Malformed parameter required_floatingips', 'MalformedParameter');
  }
  const addresses = value.map(addressOf);
  if (new Set(addresses).size !== addresses.length) {
    throw new InvalidInput('required_floatingips names an address twice', 'MalformedParameter');
  }
  if (addresses.length > amount) {
    throw new InvalidInput(
      `Number of required_floatingips (${addresses.length}) must not exceed amount (${amount})`,
      'TooLongFloatingIPs',
    );
  }
  return addresses;
}

export function validateFloatingIpParams(values: Record<string, unknown>): FloatingIpParams {
  const unknown = Object.keys(values).filter((k) => !KNOWN.has(k));
  if (unknown.length > 0) {
    throw new InvalidInput(`Unknown parameter ${unknown.join(', ')} for virtual:floatingip`);
  }
  const network = networkIdOf(values.network_id);
  const amount = amountOf(values.amount);
  return {
    network_id: network,
    amount,
    required_floatingips: requiredOf(values.required_floatingips, amount),
  };
}

/**
 * An update, as Blazar allows it: `amount` (down only before the start), and
 * `required_floatingips` only to `[]`; `network_id` stays.
 */
export function validateFloatingIpUpdate(
  current: FloatingIpParams,
  changes: Record<string, unknown>,
  started: boolean,
): FloatingIpParams {
  const unknown = Object.keys(changes).filter((k) => !KNOWN.has(k));
  if (unknown.length > 0) {
    throw new InvalidInput(`Unknown parameter ${unknown.join(', ')} for virtual:floatingip`);
  }
  if ('network_id' in changes && changes.network_id !== current.network_id) {
    throw new InvalidInput(
      'Updating network_id of a floating IP reservation is not supported',
      'CantUpdateFloatingIPReservation',
    );
  }
  const required = changes.required_floatingips;
  if (required !== undefined && !(Array.isArray(required) && required.length === 0)) {
    throw new InvalidInput(
      'required_floatingips can only be updated to an empty list',
      'CantUpdateFloatingIPReservation',
    );
  }
  const next = validateFloatingIpParams({
    network_id: current.network_id,
    amount: changes.amount ?? current.amount,
    required_floatingips: required ?? current.required_floatingips,
  });
  if (started && next.amount < current.amount) {
    throw new InvalidInput(
      'The amount of a started floating IP reservation can only grow',
      'CantUpdateFloatingIPReservation',
    );
  }
  return next;
}

export function asFloatingIpParams(stored: JsonObject): FloatingIpParams {
  return stored as FloatingIpParams;
}
