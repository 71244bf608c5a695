//! PCIe: byte accounting ([`tlp`]), the link ([`link`]), the root complex
//! ([`rc`]) and link test agents ([`ping`]).

pub mod link;
pub mod ping;
pub mod rc;
pub mod tlp;
