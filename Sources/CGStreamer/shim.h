// GStreamer 1.x (Debian libgstreamer1.0-dev) and GIO's GSocket, for the Media module only. The helpers wrap what
// Swift cannot call directly (GObject's variadic property setters, cast macros) and keep GLib's types on this side.
#include <gst/gst.h>
#include <gst/rtp/gstrtpbuffer.h>
#include <gio/gio.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
// SwiftPM rebuilds Media when this file changes, not when gate.h alone does: touch a Media source after editing it.
#include "probe.h"
#include "gate.h"
#include "recording_cap.h"
#include "send_lag.h"
#include "gate_bench.h"
#include "bridge.h"
#include "webrtc.h"
#include "devices.h"
#include "loop.h"
#include "capture.h"
#include "frames.h"

/// Initialises GStreamer once; 0 on success, else -1 with `*error` a malloc'd message (free with parley_gst_free).
static inline int parley_gst_init(char **error) {
    GError *failure = NULL;
    if (gst_init_check(NULL, NULL, &failure)) return 0;
    if (error) *error = g_strdup(failure ? failure->message : "gst_init_check failed");
    if (failure) g_error_free(failure);
    return -1;
}

static inline void parley_gst_free(char *text) { g_free(text); }

/// Whether the element factory exists (a plugin is installed).
static inline int parley_gst_has_element(const char *factory) {
    GstElementFactory *found = gst_element_factory_find(factory);
    if (!found) return 0;
    gst_object_unref(found);
    return 1;
}

/// A pipeline from a gst-launch description, or NULL with `*error` set.
static inline GstElement *parley_gst_parse(const char *description, char **error) {
    GError *failure = NULL;
    GstElement *pipeline = gst_parse_launch_full(description, NULL, GST_PARSE_FLAG_FATAL_ERRORS, &failure);
    if (failure) {
        if (error) *error = g_strdup(failure->message);
        g_error_free(failure);
        if (pipeline) gst_object_unref(pipeline);
        return NULL;
    }
    return pipeline;
}

/// Gives the element `name` of `pipeline` its own GSocket on a duplicate of `fd` (udpsrc and udpsink share a port
/// this way: symmetric RTP); 0 on success.
static inline int parley_gst_set_socket(GstElement *pipeline, const char *name, int fd) {
    GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline), name);
    if (!element) return -1;
    int copy = dup(fd);
    if (copy < 0) { gst_object_unref(element); return -1; }
    GSocket *socket = g_socket_new_from_fd(copy, NULL);
    if (!socket) { close(copy); gst_object_unref(element); return -1; }
    g_object_set(element, "socket", socket, "close-socket", FALSE, NULL);
    g_object_unref(socket);
    gst_object_unref(element);
    return 0;
}

/// Sets a string, integer or boolean property of the element `name`; 0 on success.
static inline int parley_gst_set_string(GstElement *pipeline, const char *name, const char *property, const char *value) {
    GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline), name);
    if (!element) return -1;
    g_object_set(element, property, value, NULL);
    gst_object_unref(element);
    return 0;
}

/// A string property of the element `name` (dtlssrtpdec's `peer-pem`): a malloc'd copy (free with parley_gst_free),
/// or NULL when the element is missing or the property unset.
static inline char *parley_gst_get_string(GstElement *pipeline, const char *name, const char *property) {
    GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline), name);
    if (!element) return NULL;
    gchar *value = NULL;
    g_object_get(element, property, &value, NULL);
    gst_object_unref(element);
    return value;
}

/// Sets an object property of the element `name` (nicesrc's and nicesink's `agent`: they take a reference); 0 on success.
static inline int parley_gst_set_object(GstElement *pipeline, const char *name, const char *property, gpointer object) {
    GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline), name);
    if (!element) return -1;
    g_object_set(element, property, object, NULL);
    gst_object_unref(element);
    return 0;
}

static inline int parley_gst_set_int(GstElement *pipeline, const char *name, const char *property, int value) {
    GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline), name);
    if (!element) return -1;
    g_object_set(element, property, value, NULL);
    gst_object_unref(element);
    return 0;
}

/// Sets a property of any type from its text (gst_util_set_object_arg: a guint SSRC, an enum's nick…). 0 on success.
static inline int parley_gst_set_from_text(GstElement *pipeline, const char *name, const char *property, const char *text) {
    GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline), name);
    if (!element) return -1;
    int found = g_object_class_find_property(G_OBJECT_GET_CLASS(element), property) != NULL;
    if (found) gst_util_set_object_arg(G_OBJECT(element), property, text);
    gst_object_unref(element);
    return found ? 0 : -1;
}

/// A numeric property of the element `name` (a payloader's last `seqnum`, its `timestamp`) as a 64-bit integer;
/// -1 when the element or the property is missing, or it is not a number.
static inline long long parley_gst_get_number(GstElement *pipeline, const char *name, const char *property) {
    GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline), name);
    if (!element) return -1;
    long long out = -1;
    GParamSpec *spec = g_object_class_find_property(G_OBJECT_GET_CLASS(element), property);
    if (spec) {
        GValue value = G_VALUE_INIT, number = G_VALUE_INIT;
        g_value_init(&value, spec->value_type);
        g_object_get_property(G_OBJECT(element), property, &value);
        g_value_init(&number, G_TYPE_INT64);
        if (g_value_transform(&value, &number)) out = g_value_get_int64(&number);
        g_value_unset(&number);
        g_value_unset(&value);
    }
    gst_object_unref(element);
    return out;
}

static inline int parley_gst_set_bool(GstElement *pipeline, const char *name, const char *property, int value) {
    GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline), name);
    if (!element) return -1;
    g_object_set(element, property, value ? TRUE : FALSE, NULL);
    gst_object_unref(element);
    return 0;
}

/// Sets an enum property of the element `name` from its nick (srtpenc's rtp-cipher "aes-128-icm"); 0 on success.
static inline int parley_gst_set_nick(GstElement *pipeline, const char *name, const char *property, const char *nick) {
    GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline), name);
    if (!element) return -1;
    gst_util_set_object_arg(G_OBJECT(element), property, nick);
    gst_object_unref(element);
    return 0;
}

/// Sets a buffer property of the element `name` (srtpenc's key) to a copy of `length` bytes; 0 on success.
static inline int parley_gst_set_bytes(
    GstElement *pipeline, const char *name, const char *property, const unsigned char *bytes, size_t length
) {
    GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline), name);
    if (!element) return -1;
    GstBuffer *buffer = gst_buffer_new_memdup(bytes, length);
    g_object_set(element, property, buffer, NULL);
    gst_buffer_unref(buffer);
    gst_object_unref(element);
    return 0;
}

/// srtpdec's keys are per SSRC: it asks with "request-key" for each stream it meets (and drops its packets until
/// answered). The answer is the caps kept with the handler: one key for whatever the peer sends.
static GstCaps *parley_gst_srtp_key_requested(GstElement *decoder, guint ssrc, gpointer caps) {
    (void)decoder; (void)ssrc;
    return gst_caps_ref((GstCaps *)caps);
}

/// Keys the srtpdec `name` with `length` bytes of master key and salt and the suite's cipher and authentication
/// (srtpdec's caps names: aes-128-icm, hmac-sha1-80…); 0 on success.
static inline int parley_gst_srtp_receive_key(
    GstElement *pipeline, const char *name, const unsigned char *bytes, size_t length, const char *cipher,
    const char *auth, const char *rtcp_cipher, const char *rtcp_auth
) {
    GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline), name);
    if (!element) return -1;
    GstBuffer *key = gst_buffer_new_memdup(bytes, length);
    GstCaps *caps = gst_caps_new_simple(
        "application/x-srtp", "srtp-key", GST_TYPE_BUFFER, key, "srtp-cipher", G_TYPE_STRING, cipher,
        "srtp-auth", G_TYPE_STRING, auth, "srtcp-cipher", G_TYPE_STRING, rtcp_cipher,
        "srtcp-auth", G_TYPE_STRING, rtcp_auth, NULL);
    gst_buffer_unref(key);
    g_signal_connect_data(
        element, "request-key", G_CALLBACK(parley_gst_srtp_key_requested), caps, (GClosureNotify)gst_caps_unref, 0);
    gst_object_unref(element);
    return 0;
}

/// rtpbin makes one source pad per SSRC and payload type it hears; a peer (or anyone who can reach the port) may
/// start any number. Each pad of the audio payload type is linked into the funnel named on the rtpbin; one of the
/// RFC 4733 telephone-event type gets an rtpdtmfdepay (which posts a "dtmf-event" message on the bus) into a
/// fakesink; any other is drained into a fakesink, so no stream is left unlinked (which would stop rtpbin).
static void parley_gst_received_pad(GstElement *rtpbin, GstPad *pad, gpointer data) {
    (void)data;
    gchar *name = gst_pad_get_name(pad);
    unsigned session = 0, ssrc = 0, pt = 0;
    int isStream = sscanf(name, "recv_rtp_src_%u_%u_%u", &session, &ssrc, &pt) == 3;
    g_free(name);
    if (!isStream) return;
    GstBin *bin = GST_BIN(gst_element_get_parent(rtpbin));
    if (!bin) return;
    int audio = GPOINTER_TO_INT(g_object_get_data(G_OBJECT(rtpbin), "parley-payload-type"));
    int events = GPOINTER_TO_INT(g_object_get_data(G_OBJECT(rtpbin), "parley-event-payload-type"));
    GstPad *target = NULL;
    if ((int)pt == audio) {
        GstElement *into = gst_bin_get_by_name(bin, (const char *)g_object_get_data(G_OBJECT(rtpbin), "parley-into"));
        if (into) {
            target = gst_element_request_pad_simple(into, "sink_%u");
            gst_object_unref(into);
        }
    } else {
        GstElement *drain = gst_element_factory_make("fakesink", NULL);
        GstElement *depay = events > 0 && (int)pt == events ? gst_element_factory_make("rtpdtmfdepay", NULL) : NULL;
        if (!drain && depay) gst_object_unref(depay);
        if (drain) {
            g_object_set(drain, "sync", FALSE, "async", FALSE, NULL);
            gst_bin_add(bin, drain);
            if (depay) {
                gst_bin_add(bin, depay);
                gst_element_link(depay, drain);
                gst_element_sync_state_with_parent(depay);
            }
            gst_element_sync_state_with_parent(drain);
            target = gst_element_get_static_pad(depay ? depay : drain, "sink");
        }
    }
    if (target) {
        gst_pad_link(pad, target);
        gst_object_unref(target);
    }
    gst_object_unref(bin);
}

/// The caps of a payload type rtpbin asks about: the audio codec's and telephone-event's, nothing else.
static GstCaps *parley_gst_pt_map(GstElement *rtpbin, guint session, guint pt, gpointer data) {
    (void)session; (void)data;
    int audio = GPOINTER_TO_INT(g_object_get_data(G_OBJECT(rtpbin), "parley-payload-type"));
    int events = GPOINTER_TO_INT(g_object_get_data(G_OBJECT(rtpbin), "parley-event-payload-type"));
    if ((int)pt == audio) {
        int clock_rate = GPOINTER_TO_INT(g_object_get_data(G_OBJECT(rtpbin), "parley-clock-rate"));
        const char *media = (const char *)g_object_get_data(G_OBJECT(rtpbin), "parley-media");
        GstCaps *caps = gst_caps_new_simple("application/x-rtp", "media", G_TYPE_STRING, media ? media : "audio",
            "clock-rate", G_TYPE_INT, clock_rate,
            "encoding-name", G_TYPE_STRING, (const char *)g_object_get_data(G_OBJECT(rtpbin), "parley-encoding"),
            "payload", G_TYPE_INT, audio, NULL);
        // The feedback the peer takes (its a=rtcp-fb; bits 1 NACK, 2 PLI, 4 FIR): rtpsession sends PLI or FIR when the
        // depayloader asks for a keyframe, and a generic NACK when the jitter buffer asks for a lost packet, only as
        // these fields allow.
        int feedback = GPOINTER_TO_INT(g_object_get_data(G_OBJECT(rtpbin), "parley-feedback"));
        if (feedback & 1) gst_caps_set_simple(caps, "rtcp-fb-nack", G_TYPE_BOOLEAN, TRUE, NULL);
        if (feedback & 2) gst_caps_set_simple(caps, "rtcp-fb-nack-pli", G_TYPE_BOOLEAN, TRUE, NULL);
        if (feedback & 4) gst_caps_set_simple(caps, "rtcp-fb-ccm-fir", G_TYPE_BOOLEAN, TRUE, NULL);
        return caps;
    }
    if (events > 0 && (int)pt == events) {
        return gst_caps_new_simple("application/x-rtp", "media", G_TYPE_STRING, "audio", "clock-rate", G_TYPE_INT, 8000,
            "encoding-name", G_TYPE_STRING, "TELEPHONE-EVENT", "payload", G_TYPE_INT, events, NULL);
    }
    return NULL;
}

/// Routes what rtpbin `rtpbin` receives: streams of `payload_type` (named `encoding`, at `clock_rate` Hz, of `media`:
/// "audio" or "video"; `feedback` the peer takes: bits 1 NACK, 2 PLI, 4 FIR) into the funnel `into`, telephone-event ones
/// (`event_payload_type`, 0 for none) to an rtpdtmfdepay, the rest drained.
static inline int parley_gst_route_received(
    GstElement *pipeline, const char *rtpbin, const char *into, int payload_type, const char *encoding, int clock_rate,
    int event_payload_type, const char *media, int feedback) {
    GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline), rtpbin);
    if (!element) return -1;
    g_object_set_data_full(G_OBJECT(element), "parley-media", g_strdup(media), g_free);
    g_object_set_data(G_OBJECT(element), "parley-feedback", GINT_TO_POINTER(feedback));
    g_object_set_data_full(G_OBJECT(element), "parley-into", g_strdup(into), g_free);
    g_object_set_data_full(G_OBJECT(element), "parley-encoding", g_strdup(encoding), g_free);
    g_object_set_data(G_OBJECT(element), "parley-payload-type", GINT_TO_POINTER(payload_type));
    g_object_set_data(G_OBJECT(element), "parley-clock-rate", GINT_TO_POINTER(clock_rate));
    g_object_set_data(G_OBJECT(element), "parley-event-payload-type", GINT_TO_POINTER(event_payload_type));
    g_signal_connect(element, "pad-added", G_CALLBACK(parley_gst_received_pad), NULL);
    g_signal_connect(element, "request-pt-map", G_CALLBACK(parley_gst_pt_map), NULL);
    gst_object_unref(element);
    return 0;
}

/// Starts (`start` 1) or ends an RFC 4733 event `number` (0–15) at the rtpdtmfsrc `name`; 0 when it took it.
static inline int parley_gst_dtmf(GstElement *pipeline, const char *name, int number, int start) {
    GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline), name);
    if (!element) return -1;
    GstPad *pad = gst_element_get_static_pad(element, "src");
    if (!pad) { gst_object_unref(element); return -1; }
    GstStructure *structure = start
        ? gst_structure_new("dtmf-event", "type", G_TYPE_INT, 1, "number", G_TYPE_INT, number, "volume", G_TYPE_INT, 10,
              "start", G_TYPE_BOOLEAN, TRUE, NULL)
        : gst_structure_new("dtmf-event", "type", G_TYPE_INT, 1, "start", G_TYPE_BOOLEAN, FALSE, NULL);
    // An upstream event arrives at a source through its src pad, as if from downstream (the event owns the structure).
    gboolean taken = gst_pad_send_event(pad, gst_event_new_custom(GST_EVENT_CUSTOM_UPSTREAM, structure));
    gst_object_unref(pad);
    gst_object_unref(element);
    return taken ? 0 : -1;
}

/// The loudest channel's RMS (dB below full scale, negative) of a `level` element's message, or 1 when it has none.
static inline double parley_gst_level_rms(const GstStructure *structure) {
    const GValue *rms = gst_structure_get_value(structure, "rms");
    double loudest = 1;
    if (rms && G_VALUE_HOLDS(rms, G_TYPE_VALUE_ARRAY)) {
        G_GNUC_BEGIN_IGNORE_DEPRECATIONS
        GValueArray *channels = (GValueArray *)g_value_get_boxed(rms);
        for (guint index = 0; channels && index < channels->n_values; index++) {
            double value = g_value_get_double(g_value_array_get_nth(channels, index));
            if (loudest > 0 || value > loudest) loudest = value;
        }
        G_GNUC_END_IGNORE_DEPRECATIONS
    } else if (rms && GST_VALUE_HOLDS_ARRAY(rms)) {
        for (guint index = 0; index < gst_value_array_get_size(rms); index++) {
            double value = g_value_get_double(gst_value_array_get_value(rms, index));
            if (loudest > 0 || value > loudest) loudest = value;
        }
    }
    return loudest;
}

/// Empties the pipeline's bus (nothing else reads it, and a bus keeps every message until it is read): the
/// telephone-event numbers received go into `numbers` (at most `capacity`; their count is returned), the first
/// error into `*error` (malloc'd, or left NULL), and the last RMS each `level` element named in `level_names` (at most
/// `level_count`) posted into `levels` (dB; untouched for an element that posted nothing).
static inline int parley_gst_poll(
    GstElement *pipeline, int *numbers, int capacity, char **error, const char *const *level_names, double *levels,
    int level_count) {
    GstBus *bus = gst_element_get_bus(pipeline);
    int count = 0;
    GstMessage *message;
    while ((message = gst_bus_pop(bus))) {
        if (GST_MESSAGE_TYPE(message) == GST_MESSAGE_ERROR && error && !*error) {
            // The element, its message and GStreamer's detail (a DTLS alert, a socket's errno): "rtpsrc: Could not
            // read from resource. (… receive error 111: Connection refused)".
            GError *failure = NULL;
            gchar *detail = NULL;
            gst_message_parse_error(message, &failure, &detail);
            const gchar *origin = GST_MESSAGE_SRC(message) ? GST_OBJECT_NAME(GST_MESSAGE_SRC(message)) : NULL;
            const gchar *last = detail ? strrchr(detail, '\n') : NULL;
            *error = g_strdup_printf("%s%s%s%s%s%s", origin ? origin : "", origin ? ": " : "",
                failure ? failure->message : "error", detail ? " (" : "", detail ? (last ? last + 1 : detail) : "",
                detail ? ")" : "");
            g_free(detail);
            if (failure) g_error_free(failure);
        } else if (GST_MESSAGE_TYPE(message) == GST_MESSAGE_ELEMENT) {
            const GstStructure *structure = gst_message_get_structure(message);
            int number = -1;
            gboolean start = TRUE;
            if (structure && gst_structure_has_name(structure, "level") && GST_MESSAGE_SRC(message)) {
                const gchar *origin = GST_OBJECT_NAME(GST_MESSAGE_SRC(message));
                double rms = parley_gst_level_rms(structure);
                for (int index = 0; index < level_count; index++) {
                    if (origin && rms <= 0 && strcmp(origin, level_names[index]) == 0) levels[index] = rms;
                }
            } else if (structure && gst_structure_has_name(structure, "dtmf-event")
                && gst_structure_get_int(structure, "number", &number)) {
                if (gst_structure_has_field(structure, "start")) gst_structure_get_boolean(structure, "start", &start);
                if (start && number >= 0 && number <= 15 && count < capacity) numbers[count++] = number;
            }
        }
        gst_message_unref(message);
    }
    gst_object_unref(bus);
    return count;
}

/// Starts the pipeline; 0 when it is playing or on its way there.
static inline int parley_gst_play(GstElement *pipeline) {
    return gst_element_set_state(pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE ? -1 : 0;
}

/// The first error on the pipeline's bus, if any, without waiting: a malloc'd message, or NULL.
static inline char *parley_gst_take_error(GstElement *pipeline) {
    GstBus *bus = gst_element_get_bus(pipeline);
    char *text = NULL;
    GstMessage *message;
    while (!text && (message = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR))) {
        GError *failure = NULL;
        gst_message_parse_error(message, &failure, NULL);
        text = g_strdup(failure ? failure->message : "error");
        if (failure) g_error_free(failure);
        gst_message_unref(message);
    }
    gst_object_unref(bus);
    return text;
}

/// Ends the pipeline: an end of stream first (a WAV file writer completes its header), waiting at most
/// `timeout_ms` for it, then the NULL state; the pipeline is released.
static inline void parley_gst_finish(GstElement *pipeline, int timeout_ms) {
    GstState state = GST_STATE_NULL, pending = GST_STATE_VOID_PENDING;
    gst_element_get_state(pipeline, &state, &pending, 0);
    if (timeout_ms > 0 && (state == GST_STATE_PLAYING || pending == GST_STATE_PLAYING)) {
        gst_element_send_event(pipeline, gst_event_new_eos());
        GstBus *bus = gst_element_get_bus(pipeline);
        GstMessage *message = gst_bus_timed_pop_filtered(
            bus, (GstClockTime)timeout_ms * GST_MSECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
        if (message) gst_message_unref(message);
        gst_object_unref(bus);
    }
    gst_element_set_state(pipeline, GST_STATE_NULL);
    gst_object_unref(pipeline);
}

/// Tells the element `name` (a recording's audiorate) that nothing more came until now: a gap event up to the
/// pipeline's current running time, which audiorate fills with silence (it does nothing before the first audio,
/// whose timestamps it needs). 0 when it took it.
static inline int parley_gst_gap_until_now(GstElement *pipeline, const char *name) {
    GstClockTime now = gst_element_get_current_running_time(pipeline);
    if (!GST_CLOCK_TIME_IS_VALID(now)) return -1;
    GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline), name);
    if (!element) return -1;
    GstPad *pad = gst_element_get_static_pad(element, "sink");
    gst_object_unref(element);
    if (!pad) return -1;
    gboolean taken = gst_pad_send_event(pad, gst_event_new_gap(now, GST_CLOCK_TIME_NONE));
    gst_object_unref(pad);
    return taken ? 0 : -1;
}

/// The internal RTPSession of session 0 of the rtpbin `name` (a reference of the caller's own), NULL without one.
static inline GObject *parley_gst_internal_session(GstElement *pipeline, const char *name) {
    GstElement *rtpbin = gst_bin_get_by_name(GST_BIN(pipeline), name);
    if (!rtpbin) return NULL;
    GObject *session = NULL;
    g_signal_emit_by_name(rtpbin, "get-internal-session", 0, &session);
    gst_object_unref(rtpbin);
    return session;
}

/// A call's RTP figures from rtpbin's session 0 (RFC 3550 §6.4): what we sent and received, and the last
/// receiver report the peer sent about our stream. Jitter is in RTP clock units, the round trip in 1/65536 s.
/// (rtpbin's own count of the peer's lost packets is not read: it runs across a hold's gap in the peer's sequence
/// numbers, and its probation makes a clean stream -1; the arrivals below are counted instead.)
typedef struct {
    guint64 packets_sent;
    guint64 packets_received;
    guint jitter;
    int have_report;
    gint64 peer_packets_lost;
    guint peer_fraction_lost;
    guint peer_jitter;
    guint round_trip;
    // RTCP feedback (RFC 4585, 5104): keyframe requests (PLI, FIR) and NACKs the peer sent about our stream, and
    // those we sent about its.
    guint pli_received, fir_received, nack_received;
    guint pli_sent, fir_sent, nack_sent;
} ParleyRTPStats;

/// Reads the figures of the rtpbin `name` (its internal RTPSession's `stats`: one structure per SSRC, ours marked
/// `internal`; a remote one carries what it received from that source and the last report block it sent about our
/// stream); 0 on success.
static inline int parley_gst_rtp_stats(GstElement *pipeline, const char *name, ParleyRTPStats *out) {
    memset(out, 0, sizeof *out);
    GObject *session = parley_gst_internal_session(pipeline, name);
    if (!session) return -1;
    GstStructure *stats = NULL;
    g_object_get(session, "stats", &stats, NULL);
    g_object_unref(session);
    if (!stats) return -1;
    const GValue *sources = gst_structure_get_value(stats, "source-stats");
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    if (sources && G_VALUE_HOLDS(sources, G_TYPE_VALUE_ARRAY)) {
        GValueArray *array = g_value_get_boxed(sources);
        for (guint index = 0; array && index < array->n_values; index++) {
            const GValue *value = g_value_array_get_nth(array, index);
            if (!GST_VALUE_HOLDS_STRUCTURE(value)) continue;
            const GstStructure *source = gst_value_get_structure(value);
            gboolean internal = FALSE, have_rb = FALSE;
            guint64 count = 0;
            gint lost = 0;
            guint unsigned_value = 0;
            gst_structure_get_boolean(source, "internal", &internal);
            if (internal) {
                if (gst_structure_get_uint64(source, "packets-sent", &count)) out->packets_sent += count;
                if (gst_structure_get_uint(source, "recv-pli-count", &unsigned_value)) out->pli_received += unsigned_value;
                if (gst_structure_get_uint(source, "recv-fir-count", &unsigned_value)) out->fir_received += unsigned_value;
                if (gst_structure_get_uint(source, "recv-nack-count", &unsigned_value)) out->nack_received += unsigned_value;
            } else {
                if (gst_structure_get_uint(source, "sent-pli-count", &unsigned_value)) out->pli_sent += unsigned_value;
                if (gst_structure_get_uint(source, "sent-fir-count", &unsigned_value)) out->fir_sent += unsigned_value;
                if (gst_structure_get_uint(source, "sent-nack-count", &unsigned_value)) out->nack_sent += unsigned_value;
                // A remote source's rb-* fields are the last report block it sent about our stream.
                gst_structure_get_boolean(source, "have-rb", &have_rb);
                if (have_rb) {
                    out->have_report = 1;
                    if (gst_structure_get_int(source, "rb-packetslost", &lost)) out->peer_packets_lost = lost;
                    if (gst_structure_get_uint(source, "rb-fractionlost", &unsigned_value)) out->peer_fraction_lost = unsigned_value;
                    if (gst_structure_get_uint(source, "rb-jitter", &unsigned_value)) out->peer_jitter = unsigned_value;
                    if (gst_structure_get_uint(source, "rb-round-trip", &unsigned_value)) out->round_trip = unsigned_value;
                }
                if (gst_structure_get_uint64(source, "packets-received", &count)) out->packets_received += count;
                if (gst_structure_get_uint(source, "jitter", &unsigned_value) && unsigned_value > out->jitter) {
                    out->jitter = unsigned_value;
                }
            }
        }
    }
    G_GNUC_END_IGNORE_DEPRECATIONS
    gst_structure_free(stats);
    return 0;
}

/// One RTP packet that arrived at the call's RTP port: its SSRC and sequence number.
typedef struct {
    guint32 ssrc;
    guint16 sequence;
} ParleyRTPArrival;

/// Arrivals kept between two looks (the session takes them ten times a second: 50 a second per stream).
#define PARLEY_ARRIVALS_CAPACITY 4096

/// The arrivals seen since the last look, shared (reference-counted) by the pad probe and the pipeline.
typedef struct {
    GMutex lock;
    guint count;
    /// Every RTP packet seen, taken or not.
    guint64 total;
    ParleyRTPArrival items[PARLEY_ARRIVALS_CAPACITY];
} ParleyArrivals;

static void parley_arrivals_clear(gpointer data) { g_mutex_clear(&((ParleyArrivals *)data)->lock); }
static void parley_arrivals_release(gpointer data) { g_atomic_rc_box_release_full(data, parley_arrivals_clear); }

/// Keeps one buffer's SSRC and sequence number when it is an RTP packet (GStreamer's own header check); RTCP
/// multiplexed onto the port (RFC 5761: packet types 192–223 read as payload types 64–95) is not a packet of a stream.
static void parley_arrivals_keep(ParleyArrivals *arrivals, GstBuffer *buffer) {
    GstRTPBuffer rtp = GST_RTP_BUFFER_INIT;
    if (!gst_rtp_buffer_map(buffer, GST_MAP_READ, &rtp)) return;
    guint8 payload_type = gst_rtp_buffer_get_payload_type(&rtp);
    ParleyRTPArrival arrival = { gst_rtp_buffer_get_ssrc(&rtp), gst_rtp_buffer_get_seq(&rtp) };
    gst_rtp_buffer_unmap(&rtp);
    if (payload_type >= 64 && payload_type <= 95) return;
    g_mutex_lock(&arrivals->lock);
    arrivals->total++;
    if (arrivals->count < PARLEY_ARRIVALS_CAPACITY) arrivals->items[arrivals->count++] = arrival;
    g_mutex_unlock(&arrivals->lock);
}

static GstPadProbeReturn parley_arrivals_probe(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad;
    if (info->type & GST_PAD_PROBE_TYPE_BUFFER) {
        parley_arrivals_keep(data, GST_PAD_PROBE_INFO_BUFFER(info));
    } else if (info->type & GST_PAD_PROBE_TYPE_BUFFER_LIST) {
        GstBufferList *list = GST_PAD_PROBE_INFO_BUFFER_LIST(info);
        for (guint index = 0; index < gst_buffer_list_length(list); index++) {
            parley_arrivals_keep(data, gst_buffer_list_get(list, index));
        }
    }
    return GST_PAD_PROBE_OK;
}

/// Watches what passes the pad `pad_name` of the element `name` (rtpbin's RTP sink: what enters the RTP session,
/// past the gate and the decryption): every RTP packet's SSRC and sequence number is kept for
/// `parley_gst_take_arrivals`, and counted; 0 on success.
static inline int parley_gst_watch_arrivals(GstElement *pipeline, const char *name, const char *pad_name) {
    ParleyArrivals *arrivals = g_atomic_rc_box_new0(ParleyArrivals);
    g_mutex_init(&arrivals->lock);
    return parley_gst_add_probe(pipeline, name, pad_name, GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST,
        parley_arrivals_probe, arrivals, parley_arrivals_release, "parley-arrivals");
}

/// Moves up to `capacity` of the arrivals seen since the last call into `out`, oldest first; their count (0 when
/// nothing is watched). Call again while it returns `capacity`.
static inline int parley_gst_take_arrivals(GstElement *pipeline, ParleyRTPArrival *out, int capacity) {
    ParleyArrivals *arrivals = g_object_get_data(G_OBJECT(pipeline), "parley-arrivals");
    if (!arrivals || capacity <= 0) return 0;
    g_mutex_lock(&arrivals->lock);
    guint taken = MIN(arrivals->count, (guint)capacity);
    memcpy(out, arrivals->items, taken * sizeof *out);
    memmove(arrivals->items, arrivals->items + taken, (arrivals->count - taken) * sizeof *out);
    arrivals->count -= taken;
    g_mutex_unlock(&arrivals->lock);
    return (int)taken;
}

/// Every RTP packet the arrivals watch has seen (0 when nothing is watched).
static inline guint64 parley_gst_arrivals_total(GstElement *pipeline) {
    ParleyArrivals *arrivals = g_object_get_data(G_OBJECT(pipeline), "parley-arrivals");
    if (!arrivals) return 0;
    g_mutex_lock(&arrivals->lock);
    guint64 total = arrivals->total;
    g_mutex_unlock(&arrivals->lock);
    return total;
}

// Retransmission and the session's bandwidth (after parley_gst_internal_session, which it uses).
#include "rtx.h"
// The peer's REMB and TMMBR (after parley_gst_internal_session, which it uses).
#include "bandwidth.h"
// A call's video source, replaceable while it plays.
#include "videosource.h"
