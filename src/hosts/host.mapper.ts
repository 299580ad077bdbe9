import { formatTimestamp } from '../common/dates.js';
import type { HostResponse } from './dto/host.response.js';
import type { Host } from './entities/host.entity.js';

/** Blazar's host object: every column, plus the extra capabilities as top-level keys. */
export function toHostWire(host: Host, pool: string | null): HostResponse {
  return {
    ...host.capabilities,
    id: String(host.id),
    hypervisor_hostname: host.hypervisorHostname,
    hypervisor_type: host.hypervisorType,
    hypervisor_version: host.hypervisorVersion,
    vcpus: host.vcpus,
    cpu_info: host.cpuInfo,
    memory_mb: host.memoryMb,
    local_gb: host.localGb,
    service_name: host.serviceName,
    availability_zone: host.availabilityZone,
    status: null,
    reservable: host.reservable,
    trust_id: host.trustId,
    pool,
    created_at: formatTimestamp(host.createdAt),
    updated_at: formatTimestamp(host.updatedAt),
  };
}
