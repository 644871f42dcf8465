// The device capture's guard: pulsesrc (GStreamer 1.22) takes a RECONFIGURE event by clearing its pad's
// need-reconfigure flag, so one that reaches it before its streaming thread first negotiated (a valve opening as the
// call is acknowledged) leaves it without caps: "ringbuffer in wrong state", flushing, and the call sends nothing.
#include <gst/gst.h>

static GstPadProbeReturn parley_drop_reconfigure(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    GstEvent *event = GST_PAD_PROBE_INFO_EVENT(info);
    return event && GST_EVENT_TYPE(event) == GST_EVENT_RECONFIGURE ? GST_PAD_PROBE_DROP : GST_PAD_PROBE_OK;
}

/// Keeps RECONFIGURE events from reaching the element `name` (its "src" pad); 0 when the probe is in, -1 without
/// such an element.
static inline int parley_gst_drop_reconfigure(GstElement *pipeline, const char *name) {
    GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline), name);
    if (!element) return -1;
    GstPad *pad = gst_element_get_static_pad(element, "src");
    gst_object_unref(element);
    if (!pad) return -1;
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM, parley_drop_reconfigure, NULL, NULL);
    gst_object_unref(pad);
    return 0;
}
