// libnice 0.1.21 (Debian libnice-dev), for the ICE module only. Every agent of a process runs on one GMainContext
// that one GLib thread iterates (ICE's checks, STUN and TURN, consent freshness); what the agents report is kept here,
// under a mutex, and announced on an eventfd the SIP loop watches: no Swift code runs on the GLib thread, and the
// header keeps no global state (a static in a header is one copy per Swift file that calls it).
#include <nice/agent.h>
#include <glib.h>
#include <sys/eventfd.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

/// The GLib thread's loop: it runs until the process ends.
static gpointer parley_ice_thread_main(gpointer data) {
    GMainContext *context = data;
    g_main_context_push_thread_default(context);
    GMainLoop *loop = g_main_loop_new(context, FALSE);
    g_main_loop_run(loop);
    return NULL;
}

/// A context for agents and the thread that iterates it (called once a process, from Swift's one shared value).
static inline GMainContext *parley_ice_context_start(void) {
    GMainContext *context = g_main_context_new();
    GThread *thread = g_thread_new("parley-ice", parley_ice_thread_main, g_main_context_ref(context));
    g_thread_unref(thread);
    return context;
}

enum { PARLEY_ICE_TEXT = 64, PARLEY_ICE_COMPONENTS = 2 };

/// What one component of an agent reports: its state (NiceComponentState) and the pair its checks selected.
typedef struct {
    int state;
    int restarting;  // restarted, and no check has run since: a failure reported now is the old path's, not news
    int selected;
    int local_type, remote_type;  // NiceCandidateType
    char local_address[PARLEY_ICE_TEXT], remote_address[PARLEY_ICE_TEXT];
    unsigned local_port, remote_port;
} ParleyICEComponent;

/// An agent with one stream of `components` components and what it has reported so far.
typedef struct {
    NiceAgent *agent;
    GMainContext *context;
    guint stream;
    guint components;
    int notify_fd;
    GMutex lock;
    unsigned version;           // bumped at every report
    int gathering_done;
    ParleyICEComponent component[PARLEY_ICE_COMPONENTS];
    gint64 dropped;             // packets that arrived while no pipeline read the component (not STUN)
} ParleyICE;

static void parley_ice_changed(ParleyICE *ice) {
    ice->version++;
    uint64_t one = 1;
    ssize_t written = write(ice->notify_fd, &one, sizeof one);
    (void)written;  // a full eventfd is already readable
}

static void parley_ice_on_gathered(NiceAgent *agent, guint stream, gpointer data) {
    ParleyICE *ice = data;
    g_mutex_lock(&ice->lock);
    ice->gathering_done = 1;
    parley_ice_changed(ice);
    g_mutex_unlock(&ice->lock);
}

static void parley_ice_on_state(NiceAgent *agent, guint stream, guint component, guint state, gpointer data) {
    ParleyICE *ice = data;
    if (component < 1 || component > ice->components) return;
    g_mutex_lock(&ice->lock);
    ParleyICEComponent *c = &ice->component[component - 1];
    if (state == NICE_COMPONENT_STATE_FAILED && c->restarting) {
        // The old path's consent, expiring as the restart came: the restarted checks have not run yet.
        g_mutex_unlock(&ice->lock);
        return;
    }
    if (state == NICE_COMPONENT_STATE_CONNECTING || state == NICE_COMPONENT_STATE_CONNECTED || state == NICE_COMPONENT_STATE_READY)
        c->restarting = 0;
    c->state = (int)state;
    parley_ice_changed(ice);
    g_mutex_unlock(&ice->lock);
}

static void parley_ice_on_pair(NiceAgent *agent, guint stream, guint component, NiceCandidate *local,
                               NiceCandidate *remote, gpointer data) {
    ParleyICE *ice = data;
    if (component < 1 || component > ice->components) return;
    g_mutex_lock(&ice->lock);
    ParleyICEComponent *c = &ice->component[component - 1];
    c->selected = 1;
    c->local_type = local->type;
    c->remote_type = remote->type;
    char text[NICE_ADDRESS_STRING_LEN];
    nice_address_to_string(&local->addr, text);
    g_strlcpy(c->local_address, text, sizeof c->local_address);
    c->local_port = nice_address_get_port(&local->addr);
    nice_address_to_string(&remote->addr, text);
    g_strlcpy(c->remote_address, text, sizeof c->remote_address);
    c->remote_port = nice_address_get_port(&remote->addr);
    parley_ice_changed(ice);
    g_mutex_unlock(&ice->lock);
}

/// Reads a component while no pipeline does: ICE needs a receiver attached to process checks at all; the media
/// that comes before a pipeline plays (or between two) is counted and dropped.
static void parley_ice_drop(NiceAgent *agent, guint stream, guint component, guint length, gchar *buffer, gpointer data) {
    ParleyICE *ice = data;
    g_mutex_lock(&ice->lock);
    ice->dropped++;
    g_mutex_unlock(&ice->lock);
}

/// Reads the components again with the dropping receiver: a pipeline's nicesrc, stopping, detached its own.
static inline void parley_ice_reattach(ParleyICE *ice) {
    for (guint component = 1; component <= ice->components; component++)
        nice_agent_attach_recv(ice->agent, ice->stream, component, ice->context, parley_ice_drop, ice);
}

/// A full agent (RFC 5245/8445, consent freshness per RFC 7675; UDP only, no UPnP), controlling or not, with one
/// stream of `components` (1 with rtcp-mux, else 2) whose host candidates bind component N's on `first_port + N - 1`
/// exactly (0: any port);
/// a duplicate of `notify_fd` (an eventfd) is written at every report. NULL when libnice refuses.
static inline ParleyICE *parley_ice_new(GMainContext *context, int notify_fd, int controlling, unsigned components,
                                        unsigned first_port) {
    if (components < 1 || components > PARLEY_ICE_COMPONENTS) return NULL;
    // The agent's own duplicate: released on the GLib thread after the reader may have closed its descriptor.
    notify_fd = dup(notify_fd);
    if (notify_fd < 0) return NULL;
    NiceAgent *agent = nice_agent_new_full(context, NICE_COMPATIBILITY_RFC5245, NICE_AGENT_OPTION_CONSENT_FRESHNESS);
    if (!agent) { close(notify_fd); return NULL; }
    g_object_set(agent, "controlling-mode", controlling ? TRUE : FALSE, "upnp", FALSE, "ice-tcp", FALSE, "ice-udp", TRUE, NULL);
    guint stream = nice_agent_add_stream(agent, components);
    if (stream == 0) { g_object_unref(agent); close(notify_fd); return NULL; }
    ParleyICE *ice = g_new0(ParleyICE, 1);
    ice->agent = agent;
    ice->context = g_main_context_ref(context);
    ice->stream = stream;
    ice->components = components;
    ice->notify_fd = notify_fd;
    g_mutex_init(&ice->lock);
    g_signal_connect(agent, "candidate-gathering-done", G_CALLBACK(parley_ice_on_gathered), ice);
    g_signal_connect(agent, "component-state-changed", G_CALLBACK(parley_ice_on_state), ice);
    g_signal_connect(agent, "new-selected-pair-full", G_CALLBACK(parley_ice_on_pair), ice);
    for (guint component = 1; component <= components; component++) {
        if (first_port > 0) nice_agent_set_port_range(agent, stream, component, first_port + component - 1, first_port + component - 1);
    }
    parley_ice_reattach(ice);
    return ice;
}

/// Host candidates only on this address (else libnice takes every interface's); 0 on success.
static inline int parley_ice_add_local_address(ParleyICE *ice, const char *address) {
    NiceAddress parsed;
    nice_address_init(&parsed);
    if (!nice_address_set_from_string(&parsed, address)) return -1;
    return nice_agent_add_local_address(ice->agent, &parsed) ? 0 : -1;
}

/// A STUN server (numeric address) for server-reflexive candidates.
static inline void parley_ice_set_stun(ParleyICE *ice, const char *address, unsigned port) {
    g_object_set(ice->agent, "stun-server", address, "stun-server-port", port, NULL);
}

/// A TURN server (numeric address) for relayed candidates on every component, over UDP or TCP; 0 on success.
static inline int parley_ice_set_turn(ParleyICE *ice, const char *address, unsigned port, const char *user,
                                      const char *password, int tcp) {
    for (guint component = 1; component <= ice->components; component++) {
        if (!nice_agent_set_relay_info(ice->agent, ice->stream, component, address, port, user, password,
                                       tcp ? NICE_RELAY_TYPE_TURN_TCP : NICE_RELAY_TYPE_TURN_UDP))
            return -1;
    }
    return 0;
}

/// Starts gathering (host candidates at once; server-reflexive and relayed ones as their servers answer); 0 on
/// success.
static inline int parley_ice_gather(ParleyICE *ice) {
    return nice_agent_gather_candidates(ice->agent, ice->stream) ? 0 : -1;
}

/// Our credentials, each a g_malloc'd string (free with parley_ice_free_text); 0 on success.
static inline int parley_ice_local_credentials(ParleyICE *ice, char **ufrag, char **password) {
    return nice_agent_get_local_credentials(ice->agent, ice->stream, ufrag, password) ? 0 : -1;
}

/// Our candidates gathered so far, as `candidate:` attribute values (no `a=`), one per line; g_malloc'd.
static inline char *parley_ice_local_candidates(ParleyICE *ice) {
    GString *text = g_string_new(NULL);
    for (guint component = 1; component <= ice->components; component++) {
        GSList *candidates = nice_agent_get_local_candidates(ice->agent, ice->stream, component);
        for (GSList *item = candidates; item; item = item->next) {
            gchar *line = nice_agent_generate_local_candidate_sdp(ice->agent, item->data);
            if (line) {
                g_string_append(text, g_str_has_prefix(line, "a=") ? line + 2 : line);
                g_string_append_c(text, '\n');
                g_free(line);
            }
        }
        g_slist_free_full(candidates, (GDestroyNotify)nice_candidate_free);
    }
    return g_string_free(text, FALSE);
}

/// The candidate libnice would put in c=/m= for `component` (relayed first, then server-reflexive, then host):
/// its address into `address` (`size` bytes) and its port; 0 when there is one.
static inline int parley_ice_default_candidate(ParleyICE *ice, unsigned component, char *address, size_t size, unsigned *port) {
    NiceCandidate *candidate = nice_agent_get_default_local_candidate(ice->agent, ice->stream, component);
    if (!candidate) return -1;
    char text[NICE_ADDRESS_STRING_LEN];
    nice_address_to_string(&candidate->addr, text);
    g_strlcpy(address, text, size);
    *port = nice_address_get_port(&candidate->addr);
    nice_candidate_free(candidate);
    return 0;
}

/// The peer's credentials and candidates (`candidate:` attribute values, one per line); an ICE-lite peer makes us
/// controlling (RFC 8445 §6.1.1). Returns how many candidates libnice took, or -1.
static inline int parley_ice_set_remote(ParleyICE *ice, const char *ufrag, const char *password, const char *lines, int peer_is_lite) {
    if (peer_is_lite) g_object_set(ice->agent, "controlling-mode", TRUE, NULL);
    if (!nice_agent_set_remote_credentials(ice->agent, ice->stream, ufrag, password)) return -1;
    GSList *per_component[PARLEY_ICE_COMPONENTS] = { NULL, NULL };
    gchar **split = g_strsplit(lines, "\n", -1);
    for (gchar **line = split; *line; line++) {
        if (**line == '\0') continue;
        gchar *attribute = g_strconcat("a=", *line, NULL);
        NiceCandidate *candidate = nice_agent_parse_remote_candidate_sdp(ice->agent, ice->stream, attribute);
        g_free(attribute);
        if (!candidate) continue;
        if (candidate->component_id >= 1 && candidate->component_id <= ice->components)
            per_component[candidate->component_id - 1] = g_slist_append(per_component[candidate->component_id - 1], candidate);
        else
            nice_candidate_free(candidate);
    }
    g_strfreev(split);
    int taken = 0;
    for (guint component = 1; component <= ice->components; component++) {
        GSList *list = per_component[component - 1];
        if (list) {
            int added = nice_agent_set_remote_candidates(ice->agent, ice->stream, component, list);
            if (added > 0) taken += added;
        }
        g_slist_free_full(list, (GDestroyNotify)nice_candidate_free);
    }
    return taken;
}

/// An ICE restart (RFC 8445 §9): new local credentials, the peer's candidates and checks forgotten (libnice keeps
/// the local candidates, and the pair in use until checks select a new one); each component reports no pair and
/// checking until they do. 0 on success.
static inline int parley_ice_restart(ParleyICE *ice) {
    if (!nice_agent_restart_stream(ice->agent, ice->stream)) return -1;
    g_mutex_lock(&ice->lock);
    for (guint component = 0; component < ice->components; component++) {
        ice->component[component].selected = 0;
        ice->component[component].restarting = 1;
        ice->component[component].state = NICE_COMPONENT_STATE_CONNECTING;
    }
    parley_ice_changed(ice);
    g_mutex_unlock(&ice->lock);
    return 0;
}

/// Whether the agent controls the checks now (its role after any conflict was resolved).
static inline int parley_ice_controlling(ParleyICE *ice) {
    gboolean controlling = FALSE;
    g_object_get(ice->agent, "controlling-mode", &controlling, NULL);
    return controlling ? 1 : 0;
}

/// A peer without ICE: `component` sends to `address`:`port` as if checks had selected it (libnice stops checking the
/// stream; what arrives from the peer is taken). 0 on success.
static inline int parley_ice_force_remote(ParleyICE *ice, unsigned component, const char *address, unsigned port) {
    if (component < 1 || component > ice->components) return -1;
    NiceCandidate *candidate = nice_candidate_new(NICE_CANDIDATE_TYPE_HOST);
    candidate->stream_id = ice->stream;
    candidate->component_id = component;
    candidate->transport = NICE_CANDIDATE_TRANSPORT_UDP;
    if (!nice_address_set_from_string(&candidate->addr, address)) { nice_candidate_free(candidate); return -1; }
    nice_address_set_port(&candidate->addr, port);
    gboolean set = nice_agent_set_selected_remote_candidate(ice->agent, ice->stream, component, candidate);
    nice_candidate_free(candidate);
    return set ? 0 : -1;
}

/// A copy of what the agent has reported; returns the report's version (it grows with every report).
static inline unsigned parley_ice_read(ParleyICE *ice, int *gathering_done, ParleyICEComponent out[PARLEY_ICE_COMPONENTS], long long *dropped) {
    g_mutex_lock(&ice->lock);
    unsigned version = ice->version;
    *gathering_done = ice->gathering_done;
    memcpy(out, ice->component, sizeof ice->component);
    *dropped = ice->dropped;
    g_mutex_unlock(&ice->lock);
    return version;
}

/// The agent as a GObject, for nicesrc's and nicesink's `agent` property (the elements take a reference).
static inline gpointer parley_ice_object(ParleyICE *ice) { return ice->agent; }
static inline unsigned parley_ice_stream(ParleyICE *ice) { return ice->stream; }

/// Stops the agent's reports and its reading (its handlers and receivers go).
static void parley_ice_detach(ParleyICE *ice) {
    g_signal_handlers_disconnect_by_data(ice->agent, ice);
    for (guint component = 1; component <= ice->components; component++)
        nice_agent_attach_recv(ice->agent, ice->stream, component, ice->context, NULL, NULL);
}

/// Frees what the shim holds of an agent whose work is over (the agent itself goes when no pipeline holds it).
static void parley_ice_dispose(ParleyICE *ice) {
    g_object_unref(ice->agent);
    g_main_context_unref(ice->context);
    close(ice->notify_fd);
    g_mutex_clear(&ice->lock);
    g_free(ice);
}

static void parley_ice_closed(GObject *source, GAsyncResult *result, gpointer data) {
    parley_ice_dispose(data);
}

/// On the agent's thread: its TURN allocations are released (Refresh with lifetime 0, RFC 8656 §7) and its sources
/// stopped before it goes, so a TURN server's quota is not held for the allocations' lifetime after every call.
static gboolean parley_ice_release(gpointer data) {
    ParleyICE *ice = data;
    parley_ice_detach(ice);
    nice_agent_close_async(ice->agent, parley_ice_closed, ice);
    return G_SOURCE_REMOVE;
}

/// Ends the agent on its own thread (no report runs after it; a pipeline still holding the agent keeps it alive).
static inline void parley_ice_free(ParleyICE *ice) {
    g_main_context_invoke(ice->context, parley_ice_release, ice);
}

typedef struct {
    ParleyICE *ice;
    GMutex lock;
    GCond done;
    int finished;
} ParleyICEClosing;

/// On the agent's thread, at once: its stream and sockets go now (a TURN allocation is left to expire: waiting for
/// its release could take seconds a caller cannot wait).
static gboolean parley_ice_release_and_tell(gpointer data) {
    ParleyICEClosing *closing = data;
    parley_ice_detach(closing->ice);
    nice_agent_remove_stream(closing->ice->agent, closing->ice->stream);
    parley_ice_dispose(closing->ice);
    g_mutex_lock(&closing->lock);
    closing->finished = 1;
    g_cond_signal(&closing->done);
    g_mutex_unlock(&closing->lock);
    return G_SOURCE_REMOVE;
}

/// Ends the agent on its own thread and waits until it is gone, its sockets closed (when nothing else holds it: no
/// pipeline), so that its ports can be bound again at once.
static inline void parley_ice_free_and_wait(ParleyICE *ice) {
    ParleyICEClosing closing = { .ice = ice, .finished = 0 };
    g_mutex_init(&closing.lock);
    g_cond_init(&closing.done);
    g_main_context_invoke(ice->context, parley_ice_release_and_tell, &closing);
    g_mutex_lock(&closing.lock);
    while (!closing.finished) g_cond_wait(&closing.done, &closing.lock);
    g_mutex_unlock(&closing.lock);
    g_cond_clear(&closing.done);
    g_mutex_clear(&closing.lock);
}

static inline void parley_ice_free_text(char *text) { g_free(text); }
