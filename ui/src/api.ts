/** The API, same origin, with the caller's token (X-Auth-Token) on every call. */

const TOKEN_KEY = 'climate.token';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value: string | null): void {
  if (value === null || value === '') sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, value);
}

type Query = Record<string, string | number | undefined>;

function url(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== '') params.set(key, String(value));
  }
  const text = params.toString();
  return text === '' ? path : `${path}?${text}`;
}

/** A call; a 4xx/5xx throws ApiError with Blazar's error message. */
export async function call<T>(
  method: string,
  path: string,
  query: Query = {},
  body?: unknown,
): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  const t = token();
  if (t !== null) headers['X-Auth-Token'] = t;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(url(path, query), {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'omit',
  });
  const text = await res.text();
  const data: unknown = text === '' ? null : JSON.parse(text);
  if (!res.ok) {
    const d = data as { error_message?: unknown; message?: unknown } | null;
    const message = d?.error_message ?? d?.message ?? res.statusText;
    throw new ApiError(res.status, typeof message === 'string' ? message : JSON.stringify(message));
  }
  return data as T;
}

export const get = <T>(path: string, query?: Query) => call<T>('GET', path, query);

export interface Host {
  id: string;
  hypervisor_hostname: string;
  pool: string | null;
  vcpus: number;
  memory_mb: number;
  [capability: string]: unknown;
}

export interface AllocatedReservation {
  id: string | null;
  lease_id: string | null;
  start_date: string;
  end_date: string;
  slots?: number;
}

export interface Allocation {
  resource_id: string;
  hypervisor_hostname: string;
  reservations: AllocatedReservation[];
}

export interface LeaseEvent {
  event_type: string;
  time: string;
  status: string;
}

export interface Reservation {
  id: string;
  resource_type: string;
  status: string;
  [field: string]: unknown;
}

export interface Lease {
  id: string;
  name: string;
  start_date: string;
  end_date: string;
  status: string;
  degraded: boolean;
  project_id: string;
  user_id: string;
  reservations: Reservation[];
  events: LeaseEvent[];
}

export interface CapacityStep {
  start_date: string;
  end_date: string;
  total: number;
  reserved: number;
  free: number;
  out_of_pool: number;
}

export interface Window {
  start_date: string;
  end_date: string;
  /** Host windows only. */
  free_hosts?: number;
}

export interface PowerHost {
  id: string;
  hypervisor_hostname: string;
  power_state: string;
  always_on: boolean;
  in_plan: boolean;
  transitions: { at: string; to: 'on' | 'off' }[];
}

export interface PowerPlan {
  enabled: boolean;
  boot_seconds: number;
  host_hours_off: { past_30_days: number; next_30_days: number };
  /** Hosts per power state, the whole fleet. */
  power_states: Record<string, number>;
  /** A page of hosts; `next` is the following page's path, absent on the last. */
  hosts: PowerHost[];
  next?: string;
}
