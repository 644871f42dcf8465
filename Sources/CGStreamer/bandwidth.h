// The bitrate a video peer asks us to keep under (issue 47): REMB (draft-alvestrand-rmcat-remb: a PSFB, FMT 15, whose
// FCI starts "REMB") and TMMBR (RFC 5104 §4.2.1: an RTPFB, FMT 3), read from the rtpbin's internal session's
// on-feedback-rtcp signal on its streaming thread, kept for the session to read. Parley has no congestion controller
// of its own: it follows what the peer measures.

#include <gst/rtp/gstrtcpbuffer.h>

/// The last request of each kind (kbit/s, 0 when none came), written by the signal, read by the session.
typedef struct {
    gint remb_kilobits;
    gint tmmbr_kilobits;
} ParleyPeerBitrate;

/// A mantissa shifted by an exponent, in kbit/s, clamped to what a gint holds.
static inline gint parley_bitrate_kilobits(guint64 mantissa, guint exponent) {
    if (exponent > 40) return G_MAXINT;
    guint64 bits = mantissa << exponent;
    guint64 kilobits = bits / 1000;
    return kilobits > (guint64)G_MAXINT ? G_MAXINT : (gint)kilobits;
}

/// A big-endian 32-bit word at `data`.
static inline guint32 parley_word(const guint8 *data) {
    return ((guint32)data[0] << 24) | ((guint32)data[1] << 16) | ((guint32)data[2] << 8) | data[3];
}

/// Keeps a REMB or TMMBR that names our stream (the session's own SSRC): a REMB lists the SSRCs it is about; a
/// TMMBR has an entry per SSRC (each FCI entry 8 bytes).
static void parley_peer_bitrate_feedback(GObject *session, guint type, guint fbtype, guint sender, guint media, GstBuffer *fci, gpointer user) {
    (void)sender; (void)media;
    ParleyPeerBitrate *bitrate = user;
    if (!fci) return;
    guint ours = 0;
    g_object_get(session, "internal-ssrc", &ours, NULL);
    GstMapInfo map;
    if (!gst_buffer_map(fci, &map, GST_MAP_READ)) return;
    const guint8 *data = map.data;
    if (type == GST_RTCP_TYPE_PSFB && fbtype == GST_RTCP_PSFB_TYPE_AFB && map.size >= 8 && memcmp(data, "REMB", 4) == 0) {
        // Number of SSRCs (8 bits), exponent (6 bits), mantissa (18 bits), then the SSRCs.
        guint count = data[4];
        gboolean named = FALSE;
        for (guint index = 0; index < count && 8 + 4 * (gsize)index + 4 <= map.size; index++) {
            if (parley_word(data + 8 + 4 * index) == ours) named = TRUE;
        }
        if (named) {
            guint exponent = data[5] >> 2;
            guint64 mantissa = ((guint64)(data[5] & 0x03) << 16) | ((guint64)data[6] << 8) | data[7];
            g_atomic_int_set(&bitrate->remb_kilobits, MAX(1, parley_bitrate_kilobits(mantissa, exponent)));
        }
    } else if (type == GST_RTCP_TYPE_RTPFB && fbtype == GST_RTCP_RTPFB_TYPE_TMMBR) {
        // Entries of SSRC (32 bits), then exponent (6 bits), mantissa (17 bits), overhead (9 bits).
        for (gsize offset = 0; offset + 8 <= map.size; offset += 8) {
            if (parley_word(data + offset) != ours) continue;
            guint exponent = data[offset + 4] >> 2;
            guint64 mantissa = ((guint64)(data[offset + 4] & 0x03) << 15) | ((guint64)data[offset + 5] << 7) | (data[offset + 6] >> 1);
            g_atomic_int_set(&bitrate->tmmbr_kilobits, MAX(1, parley_bitrate_kilobits(mantissa, exponent)));
        }
    }
    gst_buffer_unmap(fci, &map);
}

/// Starts keeping the peer's REMB and TMMBR requests on the rtpbin `name`'s session 0; 0 on success.
static inline int parley_gst_watch_peer_bitrate(GstElement *pipeline, const char *name) {
    GObject *session = parley_gst_internal_session(pipeline, name);
    if (!session) return -1;
    ParleyPeerBitrate *bitrate = g_new0(ParleyPeerBitrate, 1);
    g_object_set_data_full(session, "parley-peer-bitrate", bitrate, g_free);
    g_signal_connect(session, "on-feedback-rtcp", G_CALLBACK(parley_peer_bitrate_feedback), bitrate);
    g_object_unref(session);
    return 0;
}

/// The lowest bitrate the peer asked for in its last REMB and its last TMMBR (kbit/s); 0 when it asked nothing.
static inline gint parley_gst_peer_bitrate(GstElement *pipeline, const char *name) {
    GObject *session = parley_gst_internal_session(pipeline, name);
    if (!session) return 0;
    ParleyPeerBitrate *bitrate = g_object_get_data(session, "parley-peer-bitrate");
    gint remb = bitrate ? g_atomic_int_get(&bitrate->remb_kilobits) : 0;
    gint tmmbr = bitrate ? g_atomic_int_get(&bitrate->tmmbr_kilobits) : 0;
    g_object_unref(session);
    if (remb == 0) return tmmbr;
    return tmmbr == 0 ? remb : MIN(remb, tmmbr);
}
