// The device capture's guard. pulsesrc (GStreamer 1.22) cannot renegotiate once it runs: a second negotiation makes a
// new PulseAudio stream under the ring buffer's reading thread, which then reads "not connected" in a busy loop for the
// rest of the call (thousands of "Can't record audio fast enough" a second, the far end hearing scraps). Its caps never
// need to change (an audioconvert follows it), but a RECONFIGURE event from downstream (a valve opening as the call is
// acknowledged, a sink choosing its caps) marks its pad for one: the pad's flag is set before any probe on that pad
// runs, so the events are stopped one pad earlier, on the sink pad they would leave from. Before the first negotiation
// the pad's own activation flag is still there, so nothing is lost.
#include <gst/gst.h>

static GstPadProbeReturn parley_drop_reconfigure(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    GstEvent *event = GST_PAD_PROBE_INFO_EVENT(info);
    return event && GST_EVENT_TYPE(event) == GST_EVENT_RECONFIGURE ? GST_PAD_PROBE_DROP : GST_PAD_PROBE_OK;
}

/// Keeps RECONFIGURE events from reaching the element `name`: they are dropped where they would leave the element
/// linked to its "src" pad. 0 when the probe is in, -1 without such an element or link.
static inline int parley_gst_drop_reconfigure(GstElement *pipeline, const char *name) {
    GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline), name);
    if (!element) return -1;
    GstPad *pad = gst_element_get_static_pad(element, "src");
    gst_object_unref(element);
    if (!pad) return -1;
    GstPad *peer = gst_pad_get_peer(pad);
    gst_object_unref(pad);
    if (!peer) return -1;
    gst_pad_add_probe(peer, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM, parley_drop_reconfigure, NULL, NULL);
    gst_object_unref(peer);
    return 0;
}
