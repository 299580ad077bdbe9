/** Blazar's compute hosts, extra capabilities and property catalogue, as Climate's rows. */
import { checkCapabilityKey } from '../hosts/host-fields.js';
import type { SourceData, SourceRow } from './blazar-source.js';
import { flag, type HostRow, type PropertyRow, utc, utcOrNull } from './plan.js';

const HOST_TYPE = 'physical:host';
/** Climate's host ids are integers: Nova's legacy hypervisor ids, as Blazar kept them. */
const INTEGER_ID = /^[0-9]{1,9}$/;

function whole(row: SourceRow, column: string): number {
  return Number(row[column]);
}

export function mapProperties(source: SourceData, notes: string[]): PropertyRow[] {
  const other = source.resource_properties.filter((p) => p.resource_type !== HOST_TYPE);
  if (other.length > 0) {
    notes.push(
      `${other.length} resource propert(ies) of other resource types not imported: ` +
        [...new Set(other.map((p) => `${p.resource_type}:${p.property_name}`))].join(', '),
    );
  }
  return source.resource_properties
    .filter((p) => p.resource_type === HOST_TYPE)
    .map((p) => ({
      property_name: p.property_name ?? '',
      private: flag(p.private),
      created_at: utc(p.created_at ?? '1970-01-01 00:00:00'),
      updated_at: utcOrNull(p.updated_at),
    }));
}

export function mapHosts(source: SourceData, problems: string[]): HostRow[] {
  const propertyNames = new Map(
    source.resource_properties.map((p) => [p.id ?? '', p.property_name ?? '']),
  );
  const capabilities = new Map<string, Record<string, string>>();
  for (const c of source.computehost_extra_capabilities) {
    const name = propertyNames.get(c.property_id ?? '');
    if (name === undefined) {
      problems.push(
        `host ${c.computehost_id}: extra capability names property ${c.property_id}, which is not in resource_properties`,
      );
      continue;
    }
    try {
      checkCapabilityKey(name);
    } catch (error) {
      problems.push(`host ${c.computehost_id}: ${(error as Error).message}`);
      continue;
    }
    const own = capabilities.get(c.computehost_id ?? '') ?? {};
    own[name] = c.capability_value ?? '';
    capabilities.set(c.computehost_id ?? '', own);
  }
  const hosts: HostRow[] = [];
  for (const h of source.computehosts) {
    const id = h.id ?? '';
    const name = h.hypervisor_hostname;
    if (!INTEGER_ID.test(id)) {
      problems.push(
        `host ${name ?? '?'} has id ${id}: Climate keeps Nova's integer hypervisor ids only ` +
          '(Blazar at compute API microversion 2.53 or later stores uuids, which this importer cannot keep)',
      );
      continue;
    }
    if (name === null || name === '') {
      problems.push(`host ${id} has no hypervisor_hostname`);
      continue;
    }
    const reservable = flag(h.reservable);
    hosts.push({
      id: Number(id),
      hypervisor_hostname: name,
      service_name: h.service_name ?? name,
      vcpus: whole(h, 'vcpus'),
      memory_mb: whole(h, 'memory_mb'),
      local_gb: whole(h, 'local_gb'),
      hypervisor_type: h.hypervisor_type ?? '',
      hypervisor_version: whole(h, 'hypervisor_version'),
      cpu_info: h.cpu_info ?? '',
      availability_zone: h.availability_zone ?? '',
      reservable,
      reported_down: !reservable,
      capabilities: capabilities.get(id) ?? {},
      trust_id: h.trust_id,
      created_at: utc(h.created_at ?? '1970-01-01 00:00:00'),
      updated_at: utcOrNull(h.updated_at),
    });
  }
  return hosts;
}
