// CHandoffLDNS: NLnet Labs' ldns (libldns-dev), as HandoffWideArea — and only HandoffWideArea —
// sees it: DNS UPDATE (RFC 2136) signed with TSIG (RFC 8945), and plain unicast queries, for
// DNS-SD in a unicast zone (docs/discovery.md, "Beyond one link"). No DNS wire code of our own.
//
// The API imports as it is. Four additions, each because the Swift side would otherwise juggle
// ldns's out-parameters and ownership rules itself:
// - `handoff_ldns_resolver`: a resolver for one server (or /etc/resolv.conf's), with our timeout,
//   one retry, no search list, TCP when an answer is truncated;
// - `handoff_ldns_empty_rr`: an RR without rdata, which RFC 2136 §2.5.2 uses to delete
//   an RRset, and which ldns's text parser does not make;
// - `handoff_ldns_update`: builds, signs and sends one UPDATE and says what came back: the
//   answer's rcode and, when the server answered with a TSIG error (BADKEY, BADSIG, BADTIME),
//   that error — ldns reports only "the answer's signature did not verify" for those;
// - `handoff_ldns_answer_*`: the answer section's records, read one field at a time.
#ifndef C_HANDOFF_LDNS_H
#define C_HANDOFF_LDNS_H

#include <ldns/ldns.h>
#include <arpa/inet.h>
#include <string.h>

/// `server`: an IPv4 or IPv6 address, or NULL for the system's resolvers. NULL when it cannot be
/// made (a bad address, no /etc/resolv.conf).
static inline ldns_resolver *handoff_ldns_resolver(const char *server, uint16_t port, int timeout_ms) {
    ldns_resolver *resolver = NULL;
    if (server == NULL) {
        if (ldns_resolver_new_frm_file(&resolver, NULL) != LDNS_STATUS_OK) return NULL;
    } else {
        ldns_rdf *address = ldns_rdf_new_frm_str(strchr(server, ':') ? LDNS_RDF_TYPE_AAAA : LDNS_RDF_TYPE_A, server);
        if (address == NULL) return NULL;
        resolver = ldns_resolver_new();
        if (resolver == NULL || ldns_resolver_push_nameserver(resolver, address) != LDNS_STATUS_OK) {
            ldns_rdf_deep_free(address);
            if (resolver) ldns_resolver_deep_free(resolver);
            return NULL;
        }
        ldns_rdf_deep_free(address);
        ldns_resolver_set_port(resolver, port);
    }
    struct timeval timeout = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
    ldns_resolver_set_timeout(resolver, timeout);
    ldns_resolver_set_retry(resolver, 1);
    ldns_resolver_set_retrans(resolver, 1);
    ldns_resolver_set_recursive(resolver, true);
    ldns_resolver_set_dnsrch(resolver, false);
    ldns_resolver_set_defnames(resolver, false);
    ldns_resolver_set_fallback(resolver, true);
    ldns_resolver_set_random(resolver, false);
    return resolver;
}

/// An RR of `owner`, `type` and `rrclass` with TTL 0 and no rdata. NULL for a bad owner name.
static inline ldns_rr *handoff_ldns_empty_rr(const char *owner, uint16_t type, uint16_t rrclass) {
    ldns_rdf *name = ldns_dname_new_frm_str(owner);
    if (name == NULL) return NULL;
    ldns_rr *rr = ldns_rr_new();
    if (rr == NULL) {
        ldns_rdf_deep_free(name);
        return NULL;
    }
    ldns_rr_set_owner(rr, name);
    ldns_rr_set_type(rr, (ldns_rr_type)type);
    ldns_rr_set_class(rr, (ldns_rr_class)rrclass);
    ldns_rr_set_ttl(rr, 0);
    return rr;
}

/// What `handoff_ldns_update` found out.
typedef struct {
    /// ldns's status of sending (LDNS_STATUS_OK once an answer came).
    ldns_status status;
    /// The answer's rcode (RFC 2136 §2.2: 0 NOERROR, 5 REFUSED, 9 NOTAUTH, 10 NOTZONE …), or -1.
    int rcode;
    /// The TSIG error in the answer (RFC 8945 §5.3.2: 16 BADSIG, 17 BADKEY, 18 BADTIME), or 0.
    int tsig_error;
} handoff_ldns_update_result;

/// Sends one UPDATE of `zone` with `updates` (taken: freed here), signed with the key. The
/// resolver keeps copies of the key (ldns checks the answer's signature with them): one resolver
/// for updates, owned by whoever holds the key.
static inline handoff_ldns_update_result handoff_ldns_update(
    ldns_resolver *resolver, const char *zone, ldns_rr_list *updates,
    const char *key_name, const char *key_algorithm, const char *key_secret) {
    handoff_ldns_update_result result = { LDNS_STATUS_ERR, -1, 0 };
    ldns_rdf *zone_name = ldns_dname_new_frm_str(zone);
    if (zone_name == NULL) {
        ldns_rr_list_deep_free(updates);
        result.status = LDNS_STATUS_DOMAINNAME_OVERFLOW;
        return result;
    }
    ldns_pkt *update = ldns_update_pkt_new(zone_name, LDNS_RR_CLASS_IN, NULL, updates, NULL);
    ldns_rr_list_deep_free(updates);
    if (update == NULL) {
        result.status = LDNS_STATUS_MEM_ERR;
        return result;
    }
    ldns_pkt_set_random_id(update);
    ldns_resolver_set_tsig_keyname(resolver, key_name);
    ldns_resolver_set_tsig_algorithm(resolver, key_algorithm);
    ldns_resolver_set_tsig_keydata(resolver, key_secret);
    result.status = ldns_update_pkt_tsig_add(update, resolver);
    ldns_pkt *answer = NULL;
    // ldns_send, not ldns_resolver_send_pkt: the latter drops an answer whose signature does not
    // verify, and an unsigned answer is how a server says it does not know the key.
    if (result.status == LDNS_STATUS_OK) result.status = ldns_send(&answer, resolver, update);
    ldns_pkt_free(update);
    if (answer != NULL) {
        result.rcode = (int)ldns_pkt_get_rcode(answer);
        ldns_rr *tsig = ldns_pkt_tsig(answer);
        // RFC 8945 §4.2: algorithm, time, fudge, MAC, original ID, error, other data.
        if (tsig != NULL && ldns_rr_rd_count(tsig) > 5 && ldns_rdf_size(ldns_rr_rdf(tsig, 5)) == 2)
            result.tsig_error = (int)ldns_rdf2native_int16(ldns_rr_rdf(tsig, 5));
        ldns_pkt_free(answer);
    }
    return result;
}

/// The answer section's size; the answer's rcode.
static inline size_t handoff_ldns_answer_count(const ldns_pkt *answer) {
    return ldns_rr_list_rr_count(ldns_pkt_answer(answer));
}

static inline const ldns_rr *handoff_ldns_answer_rr(const ldns_pkt *answer, size_t index) {
    return ldns_rr_list_rr(ldns_pkt_answer(answer), index);
}

#endif
