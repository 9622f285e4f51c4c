"""The flow-level network: transfers as flows on routes, sharing links by max-min fairness.

==================  ===============================================================================
module              what it holds
==================  ===============================================================================
``flow_network``    ``FlowNetwork``: flows on a simpy Environment, rates recomputed on start and end
``rate_updates``    its re-fill after a start or a drain: a region or the components; new rates applied
``flow_drains``     its wake-ups at predicted drains: flows off their links, bytes booked, arrivals
``flow_reports``    its reports: link counters, utilisation, active flows, gathered from the links
``flow_records``    what the network keeps and reports: a transfer's state, link counters, timeline entries
``fairness``        weighted max-min fairness by progressive filling, per connected component
``region``          re-filling only the links a change reaches; the rest proven unchanged
``flow_groups``     groups of identical flows, simulated once and replayed per member
``phase_arrival``   a batch of flows' joint arrival: one simpy event in the place of the last flow's
``drain_queue``     predicted drains kept by time: one heap entry per instant, not per flow
``routes``          a topology as numbered links with capacity and latency; cached routes
``topology_cache``  the links, routes and collective plans every network on one topology can share
==================  ===============================================================================
"""

__all__ = ["drain_queue", "fairness", "flow_drains", "flow_groups", "flow_network", "flow_records", "flow_reports",
           "phase_arrival", "rate_updates", "region", "routes", "topology_cache"]
