// The browser's audio (issue 45, docs/web-softphone.md "Audio in the browser"): a webrtcbin that answers the page's
// offer (its action signals and promises, which Swift cannot emit: g_signal_emit_by_name is variadic), links the
// page's audio when its pad appears, and forwards samples between the call's pipeline and the browser's (an
// appsink's new samples pushed into an appsrc of the other pipeline, restamped there).
// webrtcbin's library calls its API unstable and warns unless told it is known.
#define GST_USE_UNSTABLE_API 1
#include <gst/webrtc/webrtc.h>
#include <gst/sdp/sdp.h>
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>

/// Links each source pad webrtcbin adds (the page's audio, once negotiated) to the sink pad of the element `into`
/// (the receiving chain's depayloader). A second stream's pad is left unlinked.
static void parley_webrtc_pad_added(GstElement *webrtc, GstPad *pad, gpointer into) {
    if (GST_PAD_DIRECTION(pad) != GST_PAD_SRC) return;
    GstPad *sink = gst_element_get_static_pad(GST_ELEMENT(into), "sink");
    if (sink && !gst_pad_is_linked(sink)) gst_pad_link(pad, sink);
    if (sink) gst_object_unref(sink);
}

/// Links what webrtcbin `web` receives to the element `into` of `pipeline`; 0 on success.
static inline int parley_webrtc_link_incoming(GstElement *pipeline, const char *web, const char *into) {
    GstElement *webrtc = gst_bin_get_by_name(GST_BIN(pipeline), web);
    GstElement *depay = gst_bin_get_by_name(GST_BIN(pipeline), into);
    if (!webrtc || !depay) {
        if (webrtc) gst_object_unref(webrtc);
        if (depay) gst_object_unref(depay);
        return -1;
    }
    g_signal_connect_data(webrtc, "pad-added", G_CALLBACK(parley_webrtc_pad_added), depay, (GClosureNotify)(void (*)(void))gst_object_unref, 0);
    gst_object_unref(webrtc);
    return 0;
}

/// Waits for `promise` at most `timeout_ms`; its reply (owned by the promise) or NULL.
static const GstStructure *parley_webrtc_wait(GstPromise *promise, int timeout_ms) {
    gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    while (gst_promise_wait(promise) == GST_PROMISE_RESULT_PENDING && g_get_monotonic_time() < deadline) g_usleep(1000);
    return gst_promise_get_reply(promise);
}

/// Whether the local description of `webrtc` holds a candidate, and one of each kind asked for (`want_srflx`: a
/// STUN server's, `want_relay`: a TURN server's).
static int parley_webrtc_has_candidates(GstElement *webrtc, int want_srflx, int want_relay) {
    GstWebRTCSessionDescription *described = NULL;
    g_object_get(webrtc, "local-description", &described, NULL);
    if (!described) return 0;
    gchar *text = gst_sdp_message_as_text(described->sdp);
    int enough = text && strstr(text, "a=candidate:") && (!want_srflx || strstr(text, " typ srflx"))
        && (!want_relay || strstr(text, " typ relay"));
    g_free(text);
    gst_webrtc_session_description_free(described);
    return enough;
}

/// Answers the page's `offer` (SDP text) on webrtcbin `web` of `pipeline`: the remote description, an answer, the
/// local description, then ICE gathering waited for (at most `timeout_ms` in all) until it completes or the local
/// description holds a candidate of each kind the servers give (`want_srflx`, `want_relay`): a TURN server's other
/// allocations, or a host address that cannot reach it, would otherwise hold the answer for seconds. The answer
/// carries the candidates gathered by then. Blocks (call off the loop). 0 with `*answer` a malloc'd SDP (free with
/// parley_gst_free), else -1 with `*error` one.
static inline int parley_webrtc_answer(GstElement *pipeline, const char *web, const char *offer, int timeout_ms, int want_srflx, int want_relay, char **answer, char **error) {
    GstElement *webrtc = gst_bin_get_by_name(GST_BIN(pipeline), web);
    if (!webrtc) { *error = g_strdup("no webrtcbin"); return -1; }
    int result = -1;
    GstSDPMessage *sdp = NULL;
    if (gst_sdp_message_new_from_text(offer, &sdp) != GST_SDP_OK || !sdp) {
        *error = g_strdup("the offer is not SDP");
        gst_object_unref(webrtc);
        return -1;
    }
    GstWebRTCSessionDescription *remote = gst_webrtc_session_description_new(GST_WEBRTC_SDP_TYPE_OFFER, sdp);
    GstPromise *promise = gst_promise_new();
    g_signal_emit_by_name(webrtc, "set-remote-description", remote, promise);
    const GstStructure *reply = parley_webrtc_wait(promise, timeout_ms);
    GError *failure = NULL;
    if (reply && gst_structure_get(reply, "error", G_TYPE_ERROR, &failure, NULL) && failure) {
        *error = g_strdup_printf("the offer was refused: %s", failure->message);
        g_error_free(failure);
        gst_promise_unref(promise);
        goto done;
    }
    gst_promise_unref(promise);
    promise = gst_promise_new();
    g_signal_emit_by_name(webrtc, "create-answer", NULL, promise);
    reply = parley_webrtc_wait(promise, timeout_ms);
    GstWebRTCSessionDescription *local = NULL;
    if (reply) gst_structure_get(reply, "answer", GST_TYPE_WEBRTC_SESSION_DESCRIPTION, &local, NULL);
    gst_promise_unref(promise);
    if (!local) { *error = g_strdup("no answer could be made (no audio in common)"); goto done; }
    promise = gst_promise_new();
    g_signal_emit_by_name(webrtc, "set-local-description", local, promise);
    parley_webrtc_wait(promise, timeout_ms);
    gst_promise_unref(promise);
    gst_webrtc_session_description_free(local);
    gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    GstWebRTCICEGatheringState gathering = GST_WEBRTC_ICE_GATHERING_STATE_NEW;
    while (g_get_monotonic_time() < deadline) {
        g_object_get(webrtc, "ice-gathering-state", &gathering, NULL);
        if (gathering == GST_WEBRTC_ICE_GATHERING_STATE_COMPLETE) break;
        // Host candidates alone: gathering completes at once (every address is known).
        if ((want_srflx || want_relay) && parley_webrtc_has_candidates(webrtc, want_srflx, want_relay)) break;
        g_usleep(10000);
    }
    GstWebRTCSessionDescription *described = NULL;
    g_object_get(webrtc, "local-description", &described, NULL);
    if (!described) { *error = g_strdup("no local description"); goto done; }
    *answer = gst_sdp_message_as_text(described->sdp);
    gst_webrtc_session_description_free(described);
    result = 0;
done:
    gst_webrtc_session_description_free(remote);
    gst_object_unref(webrtc);
    return result;
}

/// webrtcbin's connection state (GstWebRTCPeerConnectionState: 0 new, 1 connecting, 2 connected, 3 disconnected,
/// 4 failed, 5 closed), or -1 without one.
static inline int parley_webrtc_connection_state(GstElement *pipeline, const char *web) {
    GstElement *webrtc = gst_bin_get_by_name(GST_BIN(pipeline), web);
    if (!webrtc) return -1;
    GstWebRTCPeerConnectionState state = GST_WEBRTC_PEER_CONNECTION_STATE_NEW;
    g_object_get(webrtc, "connection-state", &state, NULL);
    gst_object_unref(webrtc);
    return (int)state;
}

/// One forwarding: the appsrc it pushes into (a reference).
typedef struct {
    GstElement *into;
} ParleyForward;

static void parley_forward_free(gpointer data) {
    ParleyForward *forward = data;
    gst_object_unref(forward->into);
    g_free(forward);
}

static GstFlowReturn parley_forward_sample(GstAppSink *sink, gpointer data) {
    ParleyForward *forward = data;
    GstSample *sample = gst_app_sink_pull_sample(sink);
    if (!sample) return GST_FLOW_OK;
    GstBuffer *buffer = gst_sample_get_buffer(sample);
    GstAppSrc *source = GST_APP_SRC(forward->into);
    if (buffer && GST_STATE(GST_ELEMENT(source)) == GST_STATE_PLAYING) {
        // Restamped by the appsrc (do-timestamp) on its own pipeline's clock.
        GstBuffer *copy = gst_buffer_copy(buffer);
        GST_BUFFER_PTS(copy) = GST_CLOCK_TIME_NONE;
        GST_BUFFER_DTS(copy) = GST_CLOCK_TIME_NONE;
        gst_app_src_push_buffer(source, copy);
    }
    gst_sample_unref(sample);
    return GST_FLOW_OK;
}

/// From now on, each sample the appsink `from` of pipeline `source` takes is pushed into the appsrc `into` of
/// pipeline `destination` (which keeps a reference to it until the appsink goes, or forwards elsewhere); 0 on
/// success.
static inline int parley_forward_samples(GstElement *source, const char *from, GstElement *destination, const char *into) {
    GstElement *sink = gst_bin_get_by_name(GST_BIN(source), from);
    GstElement *appsrc = gst_bin_get_by_name(GST_BIN(destination), into);
    if (!sink || !appsrc) {
        if (sink) gst_object_unref(sink);
        if (appsrc) gst_object_unref(appsrc);
        return -1;
    }
    ParleyForward *forward = g_new0(ParleyForward, 1);
    forward->into = appsrc;
    GstAppSinkCallbacks callbacks = { 0 };
    callbacks.new_sample = parley_forward_sample;
    gst_app_sink_set_callbacks(GST_APP_SINK(sink), &callbacks, forward, parley_forward_free);
    gst_object_unref(sink);
    return 0;
}

/// A count of the buffers reaching an element (read from any thread), kept on its pipeline.
typedef struct {
    gint buffers;
} ParleyBufferCount;

static GstPadProbeReturn parley_count_probe(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    g_atomic_int_inc(&((ParleyBufferCount *)data)->buffers);
    return GST_PAD_PROBE_OK;
}

/// Counts the buffers reaching the element `name`'s sink pad, kept on the pipeline under `key`; 0 on success.
static inline int parley_gst_count_buffers(GstElement *pipeline, const char *name, const char *key) {
    return parley_gst_add_probe(pipeline, name, "sink", GST_PAD_PROBE_TYPE_BUFFER, parley_count_probe,
        g_atomic_rc_box_new0(ParleyBufferCount), (GDestroyNotify)g_atomic_rc_box_release, key);
}

/// The buffers counted under `key` so far (-1: nothing counted there).
static inline int parley_gst_buffers_counted(GstElement *pipeline, const char *key) {
    ParleyBufferCount *count = g_object_get_data(G_OBJECT(pipeline), key);
    return count ? g_atomic_int_get(&count->buffers) : -1;
}

/// Stops forwarding from the appsink `from` of `source` (its callbacks, and the reference to the appsrc, go).
static inline void parley_forward_stop(GstElement *source, const char *from) {
    GstElement *sink = gst_bin_get_by_name(GST_BIN(source), from);
    if (!sink) return;
    GstAppSinkCallbacks callbacks = { 0 };
    gst_app_sink_set_callbacks(GST_APP_SINK(sink), &callbacks, NULL, NULL);
    gst_object_unref(sink);
}
