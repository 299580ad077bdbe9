/** What `virtual:floatingip` needs of the network service (Neutron): its narrow port. */

/** A subnet of the floating network, as registration checks an address against it. */
export interface Subnet {
  id: string;
  cidr: string;
  gatewayIp: string | null;
  /** Ranges Neutron hands addresses out of by itself. */
  allocationPools: { start: string; end: string }[];
}

/** An allocated address, as the start makes it a floating IP of the lease's project. */
export interface HeldAddress {
  address: string;
  networkId: string;
  subnetId: string | null;
  projectId: string;
  reservationId: string;
}

/**
 * The network service floating IPs live in. Calls are bounded in time; a failure is a
 * 502, an unreachable service a 503 and a timeout a 504, as for every outbound call.
 */
export interface FloatingIpNetwork {
  /** False without a network service (builtin driver): nothing is checked or made. */
  readonly checks: boolean;

  /** The network's subnets; null when there is no such network. */
  subnets(networkId: string): Promise<Subnet[] | null>;

  /**
   * Makes `address` a floating IP of the project, tagged `blazar` and
   * `reservation:<id>`; returns once the service shows it so. Idempotent: one it made
   * before is kept.
   */
  hold(address: HeldAddress): Promise<void>;

  /**
   * Disassociates the reservation's floating IP of `address` from any port and deletes
   * it; returns once the service no longer shows it. One already deleted is fine.
   */
  release(address: Omit<HeldAddress, 'subnetId' | 'projectId'>): Promise<void>;
}

/** Injection token of the FloatingIpNetwork the plugin uses. */
export const FLOATING_IP_NETWORK = Symbol('FLOATING_IP_NETWORK');

/** No network service (COMPUTE_DRIVER=builtin): addresses are only booked, never made. */
export class BuiltinNetwork implements FloatingIpNetwork {
  readonly checks = false;
  async subnets(): Promise<Subnet[] | null> {
    return [];
  }
  async hold(): Promise<void> {}
  async release(): Promise<void> {}
}
